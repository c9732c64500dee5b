// Two walks of a sub-buffer to hold against each other: libtraceevent's
// kbuffer, and eventfs's (SubbufParser over ring/rb_event.h).
#pragma once

extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <sstream>
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

inline std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{offset " << s.offset << ", len " << s.len << ", ts " << s.ts << "}";
}

// Where two walks part, for a readable failure.
inline std::string first_difference(const std::vector<Seen>& got, const std::vector<Seen>& want) {
  std::ostringstream os;
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  os << "event " << i << " of " << got.size() << " (kbuffer: " << want.size() << "): ";
  if (i < got.size()) os << got[i];
  else os << "none";
  os << " against ";
  if (i < want.size()) os << want[i];
  else os << "none";
  return os.str();
}

inline std::vector<Seen> kbuffer_walk(std::vector<std::uint8_t> page, unsigned long_size) {
  kbuffer* kb = kbuffer_alloc(long_size == 4 ? KBUFFER_LSIZE_4 : KBUFFER_LSIZE_8, KBUFFER_ENDIAN_SAME_AS_HOST);
  std::vector<Seen> out;
  if (kbuffer_load_subbuffer(kb, page.data()) == 0) {
    unsigned long long ts = 0;
    for (void* e = kbuffer_read_event(kb, &ts); e; e = kbuffer_next_event(kb, &ts))
      out.push_back({static_cast<std::size_t>(static_cast<std::uint8_t*>(e) - page.data()),
                     static_cast<std::uint32_t>(kbuffer_event_size(kb)), ts});
  }
  kbuffer_free(kb);
  return out;
}

struct SeenSink : RingSink {
  const std::uint8_t* base = nullptr;
  std::vector<Seen> seen;
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    seen.push_back({static_cast<std::size_t>(raw - base), len, ts});
  }
  void lost(std::uint64_t, std::uint64_t, bool) override {}
};

// SubbufParser's walk, `step` events at a time.
inline std::vector<Seen> parser_walk(const std::vector<std::uint8_t>& page, unsigned long_size, std::size_t step) {
  SubbufParser p(long_size);
  SeenSink sink;
  sink.base = page.data();
  EXPECT_TRUE(p.load(page.data(), page.size())) << p.problem();
  std::uint32_t from = 0;
  for (int guard = 0; from < p.data_size() && guard < 100000; ++guard) p.walk(sink, from, step);
  EXPECT_EQ(from, p.data_size());
  return sink.seen;
}

}  // namespace eventfs::testing
