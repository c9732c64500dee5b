// What eventfs-record learns from the mount at run time: the record framing
// (<mount>/header), the named types (<mount>/types/), each chosen event's
// format and id, the trace clock, and the per-CPU streams.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "error/result.h"
#include "recorder/trace_clock.h"

namespace eventfs::recorder {

// One line of the format language.
struct Field {
  std::string name;
  std::string type;     // the named type ("pid_t", "unsigned int", ...)
  unsigned bits = 0;    // of one element
  unsigned count = 0;   // 0: a scalar field; n: array:name ... count:n
  unsigned align = 1;   // bytes
  bool is_signed = false;
  unsigned offset = 0;  // bytes from the payload's start, as the layout rules imply
};

// A file of <mount>/types/.
struct NamedType {
  std::string name;
  bool is_enum = false;
  unsigned bits = 0, align = 1;
  bool is_signed = false;
  std::vector<std::pair<long long, std::string>> map;  // enum values and names
  std::vector<std::string> fields;                     // "<event>.<field>" bound to the enum
};

struct Event {
  std::string name;
  std::uint32_t id = 0;
  std::vector<Field> fields;
  unsigned size = 0;  // the payload's size, rounded up to its largest align
  unsigned end = 0;   // where its last field ends (size without the trailing padding)
  unsigned align = 1;  // its largest field's alignment: where the payload starts
};

struct MountLayout {
  std::string mount;
  std::vector<std::string> available;         // <mount>/available_events
  std::map<std::string, NamedType> types;     // empty when the mount has no types/
  std::vector<Event> events;                  // the chosen ones, in available_events order
  std::vector<Field> header_fields;           // the record header, from <mount>/header
  std::string clock = "local";                // the instance's trace clock
  ClockDeclaration clock_decl;                // its frequency
  std::vector<int> cpus;                      // per_cpu/cpuN present

  const NamedType* enum_of(const std::string& event, const std::string& field) const;
};

// Parses format-language lines into fields laid out by the rules of eventfs-format(5);
// EINVAL with a reason naming `what` and the line on a line it cannot read.
// `size` gets the record's size (rounded up to its largest align), `end` where
// its last field ends, `align` that largest align.
Result<std::vector<Field>> parse_format(const std::string& text, const std::string& what, unsigned* size = nullptr,
                                unsigned* end = nullptr, unsigned* align = nullptr);

// Parses one types/ file; EINVAL with a reason naming `what`.
Result<NamedType> parse_named_type(const std::string& name, const std::string& text, const std::string& what);

// The text of an EVENT/id file: a decimal of 1 to 2^32-1 (an id the catalog
// gives, or one eventfs derives, which has its top bit set); EINVAL with a
// reason naming `what` otherwise.
Result<std::uint32_t> parse_event_id(const std::string& text, const std::string& what);

// The selected clock of a tracefs-style trace_clock file ("[local] global").
std::string selected_clock(const std::string& text);

// Reads the mount and the chosen events (names or globs, each must match at
// least one available event) and declares its clock (declare_clock()); the
// error's reason is one line.
Result<MountLayout> read_mount(const std::string& mount, const std::vector<std::string>& patterns);

}  // namespace eventfs::recorder
