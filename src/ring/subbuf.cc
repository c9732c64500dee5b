#include "ring/subbuf.h"

// kbuffer.h has no extern "C" of its own.
extern "C" {
#include <traceevent/kbuffer.h>
}

#include <atomic>
#include <cstring>
#include <sstream>
#include <utility>

#include <fmt/format.h>

namespace eventfs {

unsigned header_page_long_size(const std::string& text) {
  // "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;"
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" commit;") == std::string::npos) continue;
    auto s = line.find("size:");
    if (s == std::string::npos) return 0;
    unsigned v = static_cast<unsigned>(std::strtoul(line.c_str() + s + 5, nullptr, 10));
    return (v == 4 || v == 8) ? v : 0;
  }
  return 0;
}

SubbufParser::SubbufParser(unsigned long_size) : long_size_(long_size == 4 ? 4 : 8) {
  kbuf_ = kbuffer_alloc(long_size_ == 4 ? KBUFFER_LSIZE_4 : KBUFFER_LSIZE_8, KBUFFER_ENDIAN_SAME_AS_HOST);
}

SubbufParser::~SubbufParser() { kbuffer_free(kbuf_); }

namespace {

std::uint64_t load_commit(const std::uint8_t* page, unsigned long_size) {
  if (long_size == 8) return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(page + 8), __ATOMIC_ACQUIRE);
  return __atomic_load_n(reinterpret_cast<const std::uint32_t*>(page + 8), __ATOMIC_ACQUIRE);
}

}  // namespace

std::uint32_t SubbufParser::committed(const std::uint8_t* page) const {
  return static_cast<std::uint32_t>(load_commit(page, long_size_) & kCommitMask);
}

bool SubbufParser::fail(std::string why) {
  problem_ = std::move(why);
  return false;
}

bool SubbufParser::reload(const std::uint8_t* page, std::size_t capacity) {
  if (page_ && page == page_ && capacity >= header_size() && load_commit(page, long_size_) == commit_) return true;
  return load(page, capacity);
}

bool SubbufParser::load(const std::uint8_t* page, std::size_t capacity) {
  page_ = nullptr;
  size_ = 0;
  missed_ = 0;
  if (!kbuf_) return fail("libtraceevent could not allocate a kbuffer");
  if (capacity < header_size())
    return fail(fmt::format("{} bytes, shorter than a sub-buffer header ({})", capacity, header_size()));
  const std::uint64_t commit = load_commit(page, long_size_);
  std::uint64_t size = commit & kCommitMask;
  if (size > capacity - header_size())
    return fail(fmt::format("its header says {} bytes of events, and it holds {}", size, capacity - header_size()));
  std::memcpy(&ts_, page, 8);
  if ((commit & kMissedStored) && header_size() + size + long_size_ > capacity)
    return fail("its lost-events count would lie past its end");
  if (commit & kMissedEvents) {
    missed_ = -1;
    std::size_t at = header_size() + size;
    if (commit & kMissedStored) {
      if (long_size_ == 8) {
        std::uint64_t n;
        std::memcpy(&n, page + at, 8);
        missed_ = static_cast<std::int64_t>(n & 0x7fffffffffffffffull);
      } else {
        std::uint32_t n;
        std::memcpy(&n, page + at, 4);
        missed_ = n;
      }
    }
  }
  // kbuffer never writes to the sub-buffer; its API is not const.
  if (kbuffer_load_subbuffer(kbuf_, const_cast<std::uint8_t*>(page)) < 0) return fail("kbuffer refused it");
  page_ = page;
  size_ = static_cast<std::uint32_t>(size);
  commit_ = commit;
  return true;
}

std::size_t SubbufParser::walk(RingSink& sink, std::uint32_t& from, std::size_t max) {
  if (!page_ || from >= size_ || max == 0) return 0;
  unsigned long long ts = 0;
  void* data = kbuffer_read_event(kbuf_, &ts);
  // Skip what was delivered before (a re-loaded sub-buffer restarts at its
  // first event; walking from there keeps the time stamps right).
  while (data && static_cast<std::uint32_t>(kbuffer_curr_index(kbuf_)) < from)
    data = kbuffer_next_event(kbuf_, &ts);
  // Two kbuffer calls an event: an event's data ends where the next event's
  // header starts (kbuffer_curr_index() + kbuffer_curr_size()).
  const std::uint8_t* events = page_ + header_size();
  std::size_t n = 0;
  while (data && n < max) {
    int len = kbuffer_event_size(kbuf_);
    const auto* at = static_cast<const std::uint8_t*>(data);
    const auto end = static_cast<std::uint32_t>(at - events) + static_cast<std::uint32_t>(len);
    if (len < 0 || end > size_) {
      // Past the commit we read: either a writer committed more since (the
      // next load shows it whole) or the sub-buffer is malformed (skip it).
      if (static_cast<std::uint32_t>(kbuffer_subbuffer_size(kbuf_)) <= size_) from = size_;
      return n;
    }
    sink.record(ts, at, static_cast<std::uint32_t>(len));
    ++n;
    from = end;
    data = kbuffer_next_event(kbuf_, &ts);
  }
  if (!data) from = size_ > from ? size_ : from;
  return n;
}

}  // namespace eventfs
