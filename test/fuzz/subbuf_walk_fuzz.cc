// Fuzzes the ring-buffer sub-buffer walk: SubbufParser (load, reload, walk)
// over ring/rb_event.h's steps, on sub-buffers made of the input's bytes,
// walked whole, in steps, as a writer grows them (the mapped reader's
// reloads) and under commit words the input chooses; the header_page and
// header_event checks on the same bytes as text.
//
// Input:
//   byte 0   bit 0: 4-byte longs (else 8); bits 1-3: events per walk() - 1
//   byte 1   which event boundaries a growing commit stops at (bit i % 8)
//   byte 2   bits 0-2: how many commit words follow
//   then     that many u32 commit words (little endian), then the
//            sub-buffer itself (header included) to its end
//
// Checked besides the sanitizers (the sub-buffer is a buffer of its exact
// size): records lie within the committed data and are delivered in order,
// at most as many per walk() as asked; a walk in steps, a walk as the commit
// grows and eventfs_rb_count() agree with a whole walk; on sub-buffers the
// kernel could have written, libtraceevent's kbuffer (the tests' oracle)
// finds the same events at the same places with the same time stamps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include "ring/rb_event.h"
#include "ring/subbuf.h"

namespace eventfs {
namespace {

// Sub-buffers are a page by default and at most a few; 64 KiB bounds the
// work of one input.
constexpr std::size_t kMaxInput = 64 * 1024 + 64;

#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

struct Seen {
  std::size_t offset;  // of the record in the sub-buffer
  std::uint32_t len;
  std::uint64_t ts;
  bool operator==(const Seen&) const = default;
};

// Collects records and checks each lies within [lo, hi) of the sub-buffer.
struct Sink : RingSink {
  const std::uint8_t* page = nullptr;
  std::size_t lo = 0, hi = 0;
  std::vector<Seen> seen;
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    FUZZ_CHECK(raw >= page + lo && raw + len <= page + hi);
    FUZZ_CHECK(len % 4 == 0);
    const std::size_t off = static_cast<std::size_t>(raw - page);
    if (!seen.empty()) FUZZ_CHECK(off >= seen.back().offset + seen.back().len);
    seen.push_back({off, len, ts});
  }
  void lost(std::uint64_t, std::uint64_t, bool) override { FUZZ_CHECK(false); }  // a parser never reports
};

// Walks `p`'s loaded sub-buffer to its end, `step` records a call.
void walk_all(SubbufParser& p, Sink& sink, std::uint32_t& from, std::size_t step) {
  // Each call delivers a record or ends the walk.
  for (std::size_t guard = 0; from < p.data_size(); ++guard) {
    FUZZ_CHECK(guard <= p.data_size() / 4 + 1);
    const std::uint32_t was = from;
    const std::size_t n = p.walk(sink, from, step);
    FUZZ_CHECK(n <= step && from >= was && from <= p.data_size());
    FUZZ_CHECK(n > 0 || from == p.data_size());
  }
}

// The events' walk by ring/rb_event.h alone: where each step ends, which of
// those ends a writer's commit could stop at (every byte a step reads lies
// before it: not so after a padding whose length word says less than the
// word itself, which the kernel never writes), and whether the walk reached
// the end of the data the way a kernel's sub-buffer does (no header it
// cannot follow, no end marker before the end).
struct Steps {
  std::vector<std::uint32_t> ends;
  std::vector<bool> can_cut;
  bool whole = false;
};

Steps steps_of(const std::uint8_t* events, std::uint32_t size) {
  Steps s;
  std::uint32_t at = 0;
  std::uint64_t ts = 0;
  std::uint32_t read_to = 0;  // the end of the bytes read so far
  eventfs_rb_event ev;
  for (;;) {
    const eventfs_rb_kind k = eventfs_rb_step(events, size, at, &ts, &ev);
    if (k == EVENTFS_RB_END) {
      s.whole = at >= size;
      return s;
    }
    if (k == EVENTFS_RB_BAD) return s;
    FUZZ_CHECK(ev.next > at && ev.next <= size);
    std::uint32_t type_len, delta, word;
    std::memcpy(&word, events + at, 4);
    eventfs_rb_split(word, &type_len, &delta);
    const bool long_header = type_len == 0 || type_len >= EVENTFS_RB_PADDING;
    read_to = std::max({read_to, ev.next, at + (long_header ? 8u : 4u)});
    at = ev.next;
    s.ends.push_back(at);
    s.can_cut.push_back(read_to <= at);
  }
}

std::vector<Seen> kbuffer_walk(const std::uint8_t* page, unsigned long_size) {
  kbuffer* kb = kbuffer_alloc(long_size == 4 ? KBUFFER_LSIZE_4 : KBUFFER_LSIZE_8, KBUFFER_ENDIAN_SAME_AS_HOST);
  FUZZ_CHECK(kb);
  std::vector<Seen> out;
  if (kbuffer_load_subbuffer(kb, const_cast<std::uint8_t*>(page)) == 0) {
    unsigned long long ts = 0;
    for (void* e = kbuffer_read_event(kb, &ts); e; e = kbuffer_next_event(kb, &ts))
      out.push_back({static_cast<std::size_t>(static_cast<std::uint8_t*>(e) - page),
                     static_cast<std::uint32_t>(kbuffer_event_size(kb)), ts});
  }
  kbuffer_free(kb);
  return out;
}

void put_commit(std::uint8_t* page, unsigned long_size, std::uint64_t commit) {
  std::memcpy(page + 8, &commit, long_size);  // little endian: the low bytes
}

std::uint64_t get_commit(const std::uint8_t* page, unsigned long_size) {
  std::uint64_t c = 0;
  std::memcpy(&c, page + 8, long_size);
  return c;
}

}  // namespace
}  // namespace eventfs

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace eventfs;
  if (size < 3 || size > kMaxInput) return 0;
  const unsigned ls = (data[0] & 1) ? 4 : 8;
  const std::size_t step = 1 + ((data[0] >> 1) & 7);
  const unsigned cut_mask = data[1];
  const std::size_t nwords = data[2] & 7;
  if (size < 3 + 4 * nwords) return 0;
  std::vector<std::uint32_t> words(nwords);
  if (nwords) std::memcpy(words.data(), data + 3, 4 * nwords);
  const std::uint8_t* body = data + 3 + 4 * nwords;
  const std::size_t cap = static_cast<std::size_t>(data + size - body);
  // The sub-buffer in a buffer of its own, exactly `cap` bytes (at least
  // one), aligned as operator new aligns: enough for the commit word's
  // atomic load.
  const std::vector<std::uint8_t> pristine(body, body + cap);
  std::vector<std::uint8_t> page(cap ? cap : 1);
  if (cap) std::memcpy(page.data(), body, cap);

  // The header texts of events/ are text the kernel gives; any bytes will do.
  const std::string as_text(reinterpret_cast<const char*>(body), cap);
  const unsigned hp = header_page_long_size(as_text);
  FUZZ_CHECK(hp == 0 || hp == 4 || hp == 8);
  header_event_mismatch(as_text);

  SubbufParser p(ls);
  FUZZ_CHECK(p.header_size() == 8 + ls);
  const std::size_t hdr = p.header_size();
  Sink whole;
  whole.page = page.data();
  if (Status loaded = p.load(page.data(), cap)) {
    FUZZ_CHECK(hdr + p.data_size() <= cap);
    FUZZ_CHECK(p.data_size() == (get_commit(page.data(), ls) & SubbufParser::kCommitMask));
    whole.lo = hdr;
    whole.hi = hdr + p.data_size();
    std::uint32_t from = 0;
    walk_all(p, whole, from, SIZE_MAX);
    // In steps of `step`.
    Sink steps = whole;
    steps.seen.clear();
    FUZZ_CHECK(p.load(page.data(), cap));
    from = 0;
    walk_all(p, steps, from, step);
    FUZZ_CHECK(steps.seen == whole.seen);
    // Counted the way the benchmark's C readers count.
    const std::uint8_t* events = page.data() + hdr;
    std::uint32_t at = 0;
    std::uint64_t ts = p.timestamp();
    FUZZ_CHECK(eventfs_rb_count(events, p.data_size(), 0, &at, &ts) == whole.seen.size());

    const Steps st = steps_of(events, p.data_size());
    // kbuffer reads a sub-buffer as the kernel writes one and trusts it;
    // where it is one, the two walks agree.
    if (st.whole) FUZZ_CHECK(kbuffer_walk(page.data(), ls) == whole.seen);

    // A writer growing the sub-buffer: the commit goes from 0 through some
    // of the step boundaries to its end (the lost-events flags only then),
    // and the walk, reloaded each time, goes on from its place. The bytes
    // walked are overwritten (0xff words are absolute time stamps), as a
    // reader of the mapping may see them, and must not be read again.
    const std::uint64_t full = get_commit(page.data(), ls);
    const std::uint32_t dsize = p.data_size();
    Sink grown;
    grown.page = page.data();
    grown.lo = hdr;
    put_commit(page.data(), ls, 0);
    FUZZ_CHECK(p.load(page.data(), cap));
    from = 0;
    for (std::size_t i = 0; i < st.ends.size(); ++i) {
      const std::uint32_t cut = st.ends[i];
      if (!(cut_mask & (1u << (i % 8))) || !st.can_cut[i] || cut >= dsize) continue;
      put_commit(page.data(), ls, cut);
      FUZZ_CHECK(p.reload(page.data(), cap));
      FUZZ_CHECK(p.data_size() == cut);
      grown.hi = hdr + cut;
      p.walk(grown, from, step);
      walk_all(p, grown, from, SIZE_MAX);
      FUZZ_CHECK(from == cut);
      std::memset(page.data() + hdr, 0xff, cut);
    }
    put_commit(page.data(), ls, dsize);
    FUZZ_CHECK(p.reload(page.data(), cap));
    grown.hi = hdr + dsize;
    walk_all(p, grown, from, SIZE_MAX);
    FUZZ_CHECK(from == dsize);
    FUZZ_CHECK(grown.seen == whole.seen);
    // The commit word as written, flags and all: a sub-buffer whose flags
    // changed is loaded afresh and reads its lost-events mark.
    std::memcpy(page.data(), pristine.data(), cap);
    FUZZ_CHECK(p.reload(page.data(), cap));
    std::int64_t mark = 0;
    if (full & SubbufParser::kMissedEvents) {
      mark = -1;
      if (full & SubbufParser::kMissedStored) {
        std::uint64_t n = 0;
        std::memcpy(&n, page.data() + hdr + dsize, ls);
        mark = ls == 8 ? static_cast<std::int64_t>(n & 0x7fffffffffffffffull) : static_cast<std::int64_t>(n);
      }
    }
    FUZZ_CHECK(p.missed() == mark);
  } else {
    FUZZ_CHECK(loaded.code() == EIO && !loaded.reason().empty());
  }

  // Commit words the input chooses, each followed by a reload and a walk:
  // whatever a reload makes of them, records stay within what it says is
  // committed.
  if (cap) std::memcpy(page.data(), pristine.data(), cap);
  Sink any;
  any.page = page.data();
  any.lo = hdr;
  std::uint32_t from = 0;
  for (std::uint32_t w : words) {
    if (cap >= hdr) put_commit(page.data(), ls, w);
    if (Status reloaded = p.reload(page.data(), cap); !reloaded) {
      FUZZ_CHECK(reloaded.code() == EIO && !reloaded.reason().empty());
      continue;
    }
    FUZZ_CHECK(hdr + p.data_size() <= cap);
    any.hi = hdr + p.data_size();
    // A fresh load starts the walk over: the caller's place goes with it.
    if (from > p.data_size()) from = 0;
    any.seen.clear();
    const std::size_t n = p.walk(any, from, step);
    FUZZ_CHECK(n <= step && n == any.seen.size());
  }
  return 0;
}
