// A decoder of eventfs's binary streams that knows nothing of record.h: the
// record header's layout comes from the mount's `header` file, each event's
// payload layout from its `format` and the names of enumerated values from
// `types/`, read at run time, laid out by the rules eventfs(5) states (each
// field at the next multiple of its align:, arrays as count elements). It
// renders a record's values as the text stream does,
// "<pid> [<cpu>] <event>: f=v f=v ...", without the time stamp; a value an
// enumeration names is shown by its name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/formats.h"

namespace eventfs_it {

class LayoutDecoder {
 public:
  // Reads <mount>/header and the format and id of each of `events`; false
  // with a reason when one is not in the language.
  bool load(const std::string& mount, const std::vector<std::string>& events, std::string& why);

  // Decodes the records of `bytes` (read from per_cpu/cpu<cpu>/trace_pipe_raw):
  // a line per event record of a loaded event; counts the rest. False with a
  // reason at the first record it cannot frame.
  bool decode(const std::string& bytes, int cpu, std::vector<std::string>& lines, std::string& why) const;

  std::size_t lost_records = 0;
  mutable std::size_t other_records = 0;

 private:
  struct Slot {
    FormatLine f;
    unsigned offset = 0;
  };
  struct Layout {
    std::vector<Slot> slots;
    unsigned size = 0;
    const Slot* find(const std::string& name) const;
  };
  static Layout lay_out(const std::vector<FormatLine>& fields);
  static bool read_int(const char* p, const FormatLine& f, long long& out);
  static bool read_uint(const std::string& bytes, std::size_t at, const Slot& s, unsigned long long& out);

  Layout header_;
  std::map<unsigned, std::pair<std::string, Layout>> events_;  // by id
  std::map<std::string, std::map<long long, std::string>> enum_names_;  // "event.field" -> value -> name
};

}  // namespace eventfs_it
