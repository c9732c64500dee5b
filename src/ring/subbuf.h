// One ring-buffer sub-buffer (a "page"): its header and its events, walked
// one header at a time (ring/rb_event.h: the steps of libtraceevent's
// kbuffer, which the tests hold it against).
//
// Layout (events/header_page): u64 timestamp; local_t commit (a long: 8
// bytes on 64-bit kernels, 4 on 32-bit ones); then `commit` bytes of events.
// The commit word's bit 31 says events were lost before this sub-buffer, bit
// 30 that their count is stored as a long right after the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "error/result.h"
#include "ring/ring.h"

namespace eventfs {

// The long size the header_page text says the kernel uses (the size of its
// `commit` field: 4 or 8), or 0 when the text cannot be read.
unsigned header_page_long_size(const std::string& header_page_text);

// "" when an events/header_event text describes the event header that
// ring/rb_event.h walks (type_len 5 bits, time_delta 27, padding 29, time
// extend 30, time stamp 31 where the kernel has it, data up to type_len
// 28), else the first of its lines that does not, or what it lacks.
std::string header_event_mismatch(const std::string& header_event_text);

class SubbufParser {
 public:
  static constexpr std::uint64_t kMissedEvents = 1ull << 31;
  static constexpr std::uint64_t kMissedStored = 1ull << 30;
  static constexpr std::uint64_t kCommitMask = (1ull << 27) - 1;

  explicit SubbufParser(unsigned long_size);  // 4 or 8
  ~SubbufParser();
  SubbufParser(const SubbufParser&) = delete;
  SubbufParser& operator=(const SubbufParser&) = delete;

  unsigned header_size() const { return 8 + long_size_; }

  // Loads the sub-buffer at `page` of `capacity` bytes (header included) as
  // it is now (re-load to see events a writer has committed since). EIO,
  // with what is wrong in a few words, when its commit does not fit in
  // `capacity`, or it says a lost count is stored after the data where there
  // is no room for one.
  Status load(const std::uint8_t* page, std::size_t capacity);
  // The sub-buffer loaded last, again, as a reader of the kernel's mapping
  // sees it after a pause: the walk keeps its place (a load walks from the
  // first event again to find it), and goes on to what the writer has
  // committed since. A commit word that shrank or whose flags changed (not
  // the sub-buffer loaded after all) loads it afresh.
  Status reload(const std::uint8_t* page, std::size_t capacity);

  // The bytes of events the sub-buffer at `page` says are committed now
  // (its commit word, without the flags), whatever is loaded.
  std::uint32_t committed(const std::uint8_t* page) const;

  // Events lost before this sub-buffer: 0, the stored count, or -1 when the
  // kernel set the flag without storing the count.
  std::int64_t missed() const { return missed_; }
  std::uint64_t timestamp() const { return ts_; }
  std::uint32_t data_size() const { return size_; }  // committed bytes of events
  const std::uint8_t* page() const { return page_; }

  // Delivers the events that start at or after data offset `from`, at most
  // `max`; moves `from` past each one delivered. Between loads, `from` only
  // moves forward (the walk goes on from where it stopped). Returns how many. Stops
  // early (setting `from` to data_size()) at a header or an event running
  // past the data: the kernel's sub-buffers have none, so the rest of such
  // a one is skipped, also what a re-load shows of it. Never reads past the
  // committed data.
  std::size_t walk(RingSink& sink, std::uint32_t& from, std::size_t max);

 private:
  unsigned long_size_;
  const std::uint8_t* page_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint64_t commit_ = 0;  // the commit word as loaded
  std::int64_t missed_ = 0;
  std::uint64_t ts_ = 0;
  // The walk: the offset of the next header to read, and the time stamp
  // before it.
  std::uint32_t at_ = 0;
  std::uint64_t at_ts_ = 0;
  bool spoiled_ = false;  // the walk met a header it cannot follow
};

}  // namespace eventfs
