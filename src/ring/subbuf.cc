#include "ring/subbuf.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "ring/rb_event.h"

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

std::string header_event_mismatch(const std::string& text) {
  // Each line as words ("type_len : 5 bits"), whatever the kernel's spacing.
  static const char* const kRequired[] = {"type_len : 5 bits", "time_delta : 27 bits", "array : 32 bits",
                                          "padding : type == 29", "time_extend : type == 30",
                                          "data max type_len == 28"};
  bool seen[std::size(kRequired)] = {};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word, norm;
    while (words >> word) norm += (norm.empty() ? "" : " ") + word;
    if (norm.empty() || norm[0] == '#') continue;
    if (norm == "time_stamp : type == 31") continue;
    auto it = std::find(std::begin(kRequired), std::end(kRequired), norm);
    if (it == std::end(kRequired)) {  // the line as the kernel wrote it, without its indent
      const auto first = line.find_first_not_of(" \t");
      return line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
    }
    seen[it - std::begin(kRequired)] = true;
  }
  for (std::size_t i = 0; i < std::size(kRequired); ++i)
    if (!seen[i]) return fmt::format("no \"{}\" line", kRequired[i]);
  return {};
}

SubbufParser::SubbufParser(unsigned long_size) : long_size_(long_size == 4 ? 4 : 8) {}

SubbufParser::~SubbufParser() = default;

namespace {

std::uint64_t load_commit(const std::uint8_t* page, unsigned long_size) {
  if (long_size == 8) return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(page + 8), __ATOMIC_ACQUIRE);
  return __atomic_load_n(reinterpret_cast<const std::uint32_t*>(page + 8), __ATOMIC_ACQUIRE);
}

}  // namespace

std::uint32_t SubbufParser::committed(const std::uint8_t* page) const {
  return static_cast<std::uint32_t>(load_commit(page, long_size_) & kCommitMask);
}

Status SubbufParser::reload(const std::uint8_t* page, std::size_t capacity) {
  if (!page_ || page != page_ || capacity < header_size()) return load(page, capacity);
  const std::uint64_t commit = load_commit(page, long_size_);
  if (commit == commit_) return {};
  // Grown, its flags as they were: what was walked stands.
  const std::uint64_t size = commit & kCommitMask;
  if ((commit & ~kCommitMask) != (commit_ & ~kCommitMask) || size < size_ || size > capacity - header_size())
    return load(page, capacity);
  size_ = static_cast<std::uint32_t>(size);
  commit_ = commit;
  return {};
}

Status SubbufParser::load(const std::uint8_t* page, std::size_t capacity) {
  page_ = nullptr;
  size_ = 0;
  missed_ = 0;
  if (capacity < header_size())
    return fail(EIO, fmt::format("{} bytes, shorter than a sub-buffer header ({})", capacity, header_size()));
  const std::uint64_t commit = load_commit(page, long_size_);
  std::uint64_t size = commit & kCommitMask;
  if (size > capacity - header_size())
    return fail(EIO, fmt::format("its header says {} bytes of events, and it holds {}", size, capacity - header_size()));
  std::memcpy(&ts_, page, 8);
  if ((commit & kMissedStored) && header_size() + size + long_size_ > capacity)
    return fail(EIO, "its lost-events count would lie past its end");
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
  page_ = page;
  size_ = static_cast<std::uint32_t>(size);
  commit_ = commit;
  at_ = 0;
  at_ts_ = ts_;
  spoiled_ = false;
  return {};
}

std::size_t SubbufParser::walk(RingSink& sink, std::uint32_t& from, std::size_t max) {
  if (!page_ || from >= size_ || max == 0) return 0;
  if (spoiled_) {
    from = size_;
    return 0;
  }
  const std::uint8_t* events = page_ + header_size();
  std::size_t n = 0;
  eventfs_rb_event ev;
  while (n < max) {
    const std::uint32_t at = at_;
    std::uint64_t ts = at_ts_;
    const eventfs_rb_kind kind = eventfs_rb_step(events, size_, at, &ts, &ev);
    if (kind == EVENTFS_RB_END || kind == EVENTFS_RB_BAD) {
      spoiled_ = kind == EVENTFS_RB_BAD;
      from = std::max(from, size_);
      return n;
    }
    at_ = ev.next;
    at_ts_ = ts;
    if (kind != EVENTFS_RB_DATA || at < from) continue;
    sink.record(ts, events + ev.data, ev.len);
    ++n;
    from = ev.next;
  }
  return n;
}

}  // namespace eventfs
