// Text rendering of stable records, one line per record, in the style of
// tracefs's trace_pipe:
//
//   <pid> [<cpu>] <secs>.<usecs>: <event>: name=value name=value ...\n
//
// e.g. "1234 [001] 5321.000042: sched_switch: prev_comm=bash prev_pid=1234
// prev_state=S next_comm=swapper/1 next_pid=0\n" (one line). The pid is the
// raw record's common_pid, the CPU three digits wide, the time the trace
// clock's nanoseconds as seconds and microseconds (6 digits, truncated).
// Values come from the stable record only (so the text is the same on every
// kernel): integers in decimal with the stable type's signedness; char arrays
// as text up to the first NUL; a char scalar (a task state) as its letter;
// other arrays as {1,2,3}. Bytes below 0x20 and 0x7f in text are shown as
// '?' so a record is always exactly one line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "projection/projection.h"

namespace eventfs {

class TextFormat {
 public:
  // From a binding's stable event and layout (the raw side is not used).
  static TextFormat compile(const Binding& b);

  // Appends one line for the stable payload `payload` (payload_size bytes),
  // as tracefs's trace_pipe begins its lines: "<comm>-<pid> [<cpu>] <secs>.<usecs>:".
  // `comm` is the task's name (at most 16 bytes are shown); empty when it is
  // not known: "<...>", or "<idle>" for pid 0, as tracefs prints them.
  // Allocates only by growing `out` (and for an event whose longest line
  // exceeds 2 KiB, a buffer for it).
  void render(std::string& out, std::string_view comm, std::int32_t pid, unsigned cpu, std::uint64_t ts_ns,
              const std::uint8_t* payload) const;

  const std::string& event_name() const { return name_; }

 private:
  enum class Kind : std::uint8_t { Signed, Unsigned, Char, Text, SignedArray, UnsignedArray };
  struct Field {
    std::string prefix;  // "name=" preceded by a space except for the first
    Kind kind;
    std::uint8_t size;   // bytes of one element
    std::uint16_t offset;
    std::uint16_t count; // elements (arrays), bytes (text)
  };
  std::string name_;
  std::string head_;  // ": <event>:"
  std::vector<Field> fields_;
  std::size_t max_line_ = 0;  // the longest line this event can render to
};

// A byte of a name or text field as tracefs's lines show it: a control
// character is '?'.
inline char printable_char(unsigned char c) { return (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c); }

// Projects a raw record and renders its line (the task's name not known):
// `scratch` must have room for p.payload_size() bytes.
void render_raw_record(std::string& out, const Projection& p, const TextFormat& f, unsigned cpu,
                       std::uint64_t ts_ns, const std::uint8_t* raw, std::uint32_t len,
                       std::uint8_t* scratch);

}  // namespace eventfs
