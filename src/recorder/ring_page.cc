#include "recorder/ring_page.h"

#include <algorithm>
#include <cstring>

namespace eventfs::recorder {
namespace {

constexpr std::uint32_t kTimeExtend = 30;
constexpr std::uint32_t kMaxSmallLen = 28;  // type_len of the largest event without array[0]
constexpr std::uint64_t kDeltaMask = (1u << 27) - 1;

// The event header word, in the host's bit-field order (as rb_event.h reads it).
std::uint32_t header_word(std::uint32_t type_len, std::uint32_t delta) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return (type_len << 27) | (delta & kDeltaMask);
#else
  return type_len | (delta << 5);
#endif
}

void put32(unsigned char* at, std::uint32_t v) { std::memcpy(at, &v, 4); }

}  // namespace

RingPage::RingPage(std::size_t page_size) : buf_(std::max(page_size, kMinPageSize), 0) {}

std::size_t RingPage::max_data(std::size_t page_size) {
  // A time extend (8), the event's header and array[0] (8), a stored count.
  return std::max(page_size, kMinPageSize) - header_size() - 16 - sizeof(long);
}

bool RingPage::add(std::uint64_t ts, const void* data, std::size_t len) {
  const std::size_t padded = (len + 3) & ~std::size_t{3};
  const bool small = padded != 0 && padded <= kMaxSmallLen * 4;
  if (events_ == 0) page_ts_ = last_ts_ = ts;
  const std::uint64_t delta = ts > last_ts_ ? ts - last_ts_ : 0;
  const bool extend = delta > kDeltaMask;
  const std::size_t need = (extend ? 8 : 0) + 4 + (small ? 0 : 4) + padded;
  // Room is left for a missed count only where one is to be stored.
  const std::size_t room = buf_.size() - header_size() - (missed_set_ ? sizeof(long) : 0);
  if (used_ + need > room) return false;
  unsigned char* at = buf_.data() + header_size() + used_;
  std::uint32_t d = static_cast<std::uint32_t>(delta);
  if (extend) {
    put32(at, header_word(kTimeExtend, static_cast<std::uint32_t>(delta & kDeltaMask)));
    put32(at + 4, static_cast<std::uint32_t>(delta >> 27));
    at += 8;
    d = 0;
  }
  if (small) {
    put32(at, header_word(static_cast<std::uint32_t>(padded / 4), d));
    at += 4;
  } else {
    put32(at, header_word(0, d));
    put32(at + 4, static_cast<std::uint32_t>(padded + 4));
    at += 8;
  }
  std::memcpy(at, data, len);
  std::memset(at + len, 0, padded - len);
  used_ += need;
  ++events_;
  last_ts_ = std::max(ts, last_ts_);
  return true;
}

void RingPage::set_missed(std::uint64_t ts, std::uint64_t count) {
  if (events_ == 0) page_ts_ = last_ts_ = ts;
  missed_ += count;
  missed_set_ = true;
}

const std::vector<unsigned char>& RingPage::finish() {
  std::memcpy(buf_.data(), &page_ts_, 8);
  std::uint64_t commit = used_;
  if (missed_set_) {
    commit |= kMissedEvents;
    // The count goes after the last event, in a long, where the page has room.
    if (buf_.size() - header_size() - used_ >= sizeof(long)) {
      const unsigned long count = static_cast<unsigned long>(missed_);
      std::memcpy(buf_.data() + header_size() + used_, &count, sizeof count);
      commit |= kMissedStored;
    }
  }
  const long word = static_cast<long>(commit);
  std::memcpy(buf_.data() + 8, &word, sizeof word);
  return buf_;
}

void RingPage::reset() {
  std::fill(buf_.begin(), buf_.end(), 0);
  used_ = events_ = 0;
  page_ts_ = last_ts_ = 0;
  missed_ = 0;
  missed_set_ = false;
}

}  // namespace eventfs::recorder
