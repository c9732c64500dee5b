#include "recorder/stream_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "recorder/tsdl.h"
#include "recorder/write_all.h"

namespace eventfs::recorder {
namespace {

template <typename T>
void put(unsigned char* at, T v) {
  std::memcpy(at, &v, sizeof v);
}

std::size_t round_up(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }

}  // namespace

StreamWriter::~StreamWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t StreamWriter::packet_size_for(std::size_t streams) {
  constexpr std::size_t kAll = 16u * 1024 * 1024;
  const std::size_t each = kAll / std::max<std::size_t>(streams, 1);
  return std::clamp(each, kMinPacketSize, kPacketSize) / 8 * 8;
}

Status StreamWriter::open(const std::string& path, std::uint32_t cpu, std::size_t packet_size) {
  path_ = path;
  cpu_ = cpu;
  packet_size_ = std::clamp(packet_size, kMinPacketSize, kPacketSize) / 8 * 8;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot create {}: {}", path, std::strerror(e)));
  }
  buf_.assign(packet_size_ + kSlack, 0);
  return {};
}

void StreamWriter::start_packet(std::uint64_t timestamp) {
  used_ = kFirstEventOffset;
  content_ = kPacketHeaderSize + kPacketContextSize;
  begin_ = end_ = clock_ = std::max(timestamp, last_end_);
}

Status StreamWriter::add_event(std::uint64_t timestamp, std::uint32_t id, std::int32_t pid, const void* payload,
                             std::size_t size, std::size_t end, std::size_t align) {
  align = std::clamp<std::size_t>(align, 1, 8);  // (a power of two: cpu_sink.h)
  // Where the payload of an event whose header is at `at` starts, and where
  // the next event would.
  auto payload_at = [&](std::size_t at) { return (at + kEventHeadSize + align - 1) & ~(align - 1); };
  auto next_at = [&](std::size_t at) { return round_up(payload_at(at) + end, 4); };
  if (used_ != 0 && (next_at(used_) > packet_size_ || timestamp >= clock_ + kEventClockSpan))
    if (Status s = flush(); !s) return s;
  if (used_ == 0) {
    start_packet(timestamp);
    // One event larger than a packet gets a packet of its own.
    if (next_at(kFirstEventOffset) + kSlack > buf_.size()) buf_.resize(next_at(kFirstEventOffset) + kSlack);
  }
  // A stream's records come in time order; one that did not would read
  // 2^32 counts later than it is: it is taken to be at the clock's time.
  timestamp = std::max(timestamp, clock_);
  unsigned char* at = buf_.data() + used_;
  const std::size_t from = payload_at(used_), next = next_at(used_);
  const std::size_t copied = std::min(size, end);
  put<std::uint32_t>(at, static_cast<std::uint32_t>(timestamp));
  put<std::uint32_t>(at + 4, id);
  put<std::int32_t>(at + 8, pid);
  // The padding before the payload (0 or 4 bytes: the header ends 4-aligned)
  // and after it (at most 3 bytes, when the record held the whole payload)
  // are zeroed by whole words, into the payload's place or past `next`:
  // the slack at the buffer's end takes what runs over.
  put<std::uint32_t>(at + kEventHeadSize, 0);
  std::memcpy(buf_.data() + from, payload, copied);
  if (copied == end)
    put<std::uint32_t>(buf_.data() + from + copied, 0);
  else
    std::memset(buf_.data() + from + copied, 0, next - from - copied);
  // A reader takes the packet's content to end where the last field does:
  // the padding after it is the packet's, not an event's.
  content_ = from + end;
  used_ = next;
  end_ = std::max(end_, timestamp);
  clock_ = timestamp;
  return {};
}

Status StreamWriter::add_lost(std::uint64_t timestamp, std::uint64_t count) {
  // A reader reports a loss as the difference between two packets' counts:
  // an empty first packet gives a loss before any event something to follow.
  if (used_ == 0 && packets_ == 0) start_packet(timestamp);
  if (used_ != 0)
    if (Status s = flush(); !s) return s;
  discarded_ += count;
  last_end_ = std::max(last_end_, timestamp);
  return {};
}

Status StreamWriter::finish() {
  if (fd_ < 0) return {};
  if (used_ == 0 && discarded_ != discarded_written_) start_packet(last_end_);
  if (used_ != 0) return flush();
  return {};
}

// The first event follows the packet context with no padding between.
static_assert(kFirstEventOffset == kPacketHeaderSize + kPacketContextSize);

Status StreamWriter::flush() {
  unsigned char* p = buf_.data();
  const std::size_t size = used_;
  put<std::uint32_t>(p, kCtfMagic);
  put<std::uint32_t>(p + 4, 0);
  put<std::uint64_t>(p + 8, begin_);
  put<std::uint64_t>(p + 16, end_);
  put<std::uint64_t>(p + 24, static_cast<std::uint64_t>(content_) * 8);
  put<std::uint64_t>(p + 32, static_cast<std::uint64_t>(size) * 8);
  put<std::uint64_t>(p + 40, discarded_);
  put<std::uint32_t>(p + 48, cpu_);
  if (Status s = write_all(fd_, p, size, path_); !s) {
    // Keep only whole packets.
    if (::ftruncate(fd_, static_cast<off_t>(file_size_)) == 0) ::lseek(fd_, static_cast<off_t>(file_size_), SEEK_SET);
    ::close(fd_);
    fd_ = -1;
    used_ = 0;
    return s;
  }
  file_size_ += size;
  ++packets_;
  last_end_ = end_;
  discarded_written_ = discarded_;
  used_ = 0;
  if (buf_.size() > packet_size_ + kSlack) {
    buf_.resize(packet_size_ + kSlack);
    buf_.shrink_to_fit();
  }
  return {};
}

}  // namespace eventfs::recorder
