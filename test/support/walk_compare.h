// Two walks of a sub-buffer to hold against each other: libtraceevent's
// kbuffer, and eventfs's (SubbufParser over ring/rb_event.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ring/subbuf.h"

namespace eventfs::testing {

// One event a walk delivered.
struct Seen {
  std::size_t offset;  // of the event's data in the sub-buffer
  std::uint32_t len;
  std::uint64_t ts;
  bool operator==(const Seen& o) const { return offset == o.offset && len == o.len && ts == o.ts; }
};

std::ostream& operator<<(std::ostream& os, const Seen& s);

// Where two walks part, for a readable failure.
std::string first_difference(const std::vector<Seen>& got, const std::vector<Seen>& want);

// kbuffer's walk of `page`.
std::vector<Seen> kbuffer_walk(std::vector<std::uint8_t> page, unsigned long_size);

struct SeenSink : RingSink {
  const std::uint8_t* base = nullptr;
  std::vector<Seen> seen;
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override;
  void lost(std::uint64_t, std::uint64_t, bool) override {}
};

// SubbufParser's walk, `step` events at a time (a gtest failure if it does
// not load or does not reach the end).
std::vector<Seen> parser_walk(const std::vector<std::uint8_t>& page, unsigned long_size, std::size_t step);

}  // namespace eventfs::testing
