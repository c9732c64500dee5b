// Two walks of a sub-buffer: kbuffer's and SubbufParser's (see walk_compare.h).
#include "support/walk_compare.h"

extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include <gtest/gtest.h>

#include <sstream>

namespace eventfs::testing {

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{offset " << s.offset << ", len " << s.len << ", ts " << s.ts << "}";
}

std::string first_difference(const std::vector<Seen>& got, const std::vector<Seen>& want) {
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

std::vector<Seen> kbuffer_walk(std::vector<std::uint8_t> page, unsigned long_size) {
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

void SeenSink::record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) {
  seen.push_back({static_cast<std::size_t>(raw - base), len, ts});
}

std::vector<Seen> parser_walk(const std::vector<std::uint8_t>& page, unsigned long_size, std::size_t step) {
  SubbufParser p(long_size);
  SeenSink sink;
  sink.base = page.data();
  Status loaded = p.load(page.data(), page.size());
  EXPECT_TRUE(loaded) << loaded.reason();
  std::uint32_t from = 0;
  for (int guard = 0; from < p.data_size() && guard < 100000; ++guard) p.walk(sink, from, step);
  EXPECT_EQ(from, p.data_size());
  return sink.seen;
}

}  // namespace eventfs::testing
