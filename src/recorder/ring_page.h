// One page of a trace.dat's CPU data, laid out as the kernel's ring buffer
// lays out a sub-buffer (what dat_format.cc's header_page and header_event
// describe): a u64 time stamp, a commit word of the host's long (the bytes of
// events, with the kernel's missed-events flags in bits 31 and 30), then the
// events, each a u32 of type_len (5 bits) and time_delta (27 bits), then its
// data (type_len 1..28: type_len * 4 bytes; 0: array[0] is 4 + the length);
// a delta past 27 bits goes first into a time extend (type_len 30). A page
// that follows a loss has the missed-events flag, and its count stored after
// the last event when the page leaves room for it, as the kernel does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace eventfs::recorder {

class RingPage {
 public:
  // The least page that holds a header and one small event.
  static constexpr std::size_t kMinPageSize = 64;
  // RB_MISSED_EVENTS and RB_MISSED_STORED in the commit word.
  static constexpr std::uint64_t kMissedEvents = 1ull << 31;
  static constexpr std::uint64_t kMissedStored = 1ull << 30;

  explicit RingPage(std::size_t page_size);

  // The size of the page header (time stamp and commit word).
  static constexpr std::size_t header_size() { return 8 + sizeof(long); }
  // The most data bytes one event may carry on a page of `page_size`
  // (room left for a time extend and a stored missed count).
  static std::size_t max_data(std::size_t page_size);

  // Appends an event of `len` bytes at `ts` (not before the last one's);
  // false when it does not fit (the caller takes the page and starts anew).
  bool add(std::uint64_t ts, const void* data, std::size_t len);
  // `count` events lost before this page's first (the page's time stamp is
  // `ts` until an event comes): set on a page without events.
  void set_missed(std::uint64_t ts, std::uint64_t count);

  bool empty() const { return used_ == 0 && missed_ == 0 && !missed_set_; }
  std::size_t events() const { return events_; }
  // The whole page (page_size bytes, zero past the events), its commit word
  // written; stays valid until the next reset().
  const std::vector<unsigned char>& finish();
  void reset();

 private:
  std::vector<unsigned char> buf_;
  std::size_t used_ = 0;  // bytes of events after the header
  std::size_t events_ = 0;
  std::uint64_t page_ts_ = 0, last_ts_ = 0;
  std::uint64_t missed_ = 0;
  bool missed_set_ = false;
};

}  // namespace eventfs::recorder
