#include "record/cpu_recorder.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "eventfs/record.h"

namespace eventfs::record {
namespace {

using Clock = std::chrono::steady_clock;

// After the events are turned off: how long a stream must stay empty to be
// done, and the most a drain takes (an event that cannot be turned off, such
// as a trace_marker write, may keep coming).
constexpr int kQuietMs = 150;
constexpr auto kDrainLimit = std::chrono::seconds(2);

}  // namespace

CpuRecorder::CpuRecorder(const MountLayout& layout, int cpu, RecordControl& control, std::size_t read_size)
    : layout_(layout), cpu_(cpu), control_(control), read_size_(read_size) {
  for (const auto& e : layout.events) kinds_[e.id] = Kind{e.size, e.end, (e.end + 7u) / 8 * 8};
}

CpuRecorder::~CpuRecorder() {
  if (thread_.joinable()) {
    control_.phase = RecordControl::kStop;
    thread_.join();
  }
  if (fd_ >= 0) ::close(fd_);
}

Status CpuRecorder::open(const std::string& dir) {
  path_ = fmt::format("{}/per_cpu/cpu{}/trace_pipe_raw", layout_.mount, cpu_);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot open {}: {}", path_, std::strerror(e)));
  }
  if (Status s = writer_.open(fmt::format("{}/stream_{}", dir, cpu_), static_cast<std::uint32_t>(cpu_)); !s)
    return s;
  buf_.assign(read_size_ / 8, 0);
  return {};
}

Status CpuRecorder::start() {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return fail(e.code().value(), e.what());
  }
  return {};
}

Status CpuRecorder::join() {
  if (thread_.joinable()) thread_.join();
  if (!error_)
    if (Status s = writer_.finish(); !s) stop_on(std::move(s).error());
  bytes_.store(writer_.bytes_written(), std::memory_order_relaxed);
  if (error_) return *error_;
  return {};
}

void CpuRecorder::stop_on(Error e) {
  if (!error_) error_ = std::move(e);
  control_.failed = true;
}

std::size_t CpuRecorder::consume(const unsigned char* p, std::size_t n) {
  std::size_t at = 0;
  while (at < n) {
    const auto* h = reinterpret_cast<const eventfs_record_header*>(p + at);
    const std::size_t avail = n - at;
    if (avail < sizeof *h || h->size > avail) break;  // the rest comes with the next read
    if (eventfs_record_check(h, avail) == 0) {
      stop_on(fail(EPROTO, fmt::format("{}: a record this eventfs-record cannot read (version {}, size {})", path_,
                                       h->version, h->size)));
      return n;
    }
    if (h->id == EVENTFS_ID_LOST) {
      eventfs_lost l;
      std::memcpy(&l, EVENTFS_RECORD_PAYLOAD(h), sizeof l);
      if (Status s = writer_.add_lost(h->timestamp, l.count); !s) {
        stop_on(std::move(s).error());
        return n;
      }
      lost_.fetch_add(l.count, std::memory_order_relaxed);
    } else if (auto k = kinds_.find(h->id); k != kinds_.end()) {
      const std::size_t have = EVENTFS_RECORD_PAYLOAD_SIZE(h);
      if (Status s = writer_.add_event(h->timestamp, h->id, h->pid, EVENTFS_RECORD_PAYLOAD(h),
                                       std::min(have, k->second.size), k->second.end, k->second.padded);
          !s) {
        stop_on(std::move(s).error());
        return n;
      }
      events_.fetch_add(1, std::memory_order_relaxed);
    } else {
      // An event someone else enabled on the same mount: not asked for.
      skipped_.fetch_add(1, std::memory_order_relaxed);
    }
    at += h->size;
  }
  bytes_.store(writer_.bytes_written(), std::memory_order_relaxed);
  return at;
}

void CpuRecorder::run() {
  auto* base = reinterpret_cast<unsigned char*>(buf_.data());
  const std::size_t cap = buf_.size() * 8;
  std::size_t kept = 0;  // bytes of a record split across reads, at base
  Clock::time_point drain_start{}, last_data = Clock::now();
  bool draining = false;
  while (!error_) {
    const int phase = control_.phase.load();
    if (phase == RecordControl::kStop) break;
    if (phase == RecordControl::kDrain && !draining) {
      draining = true;
      drain_start = last_data = Clock::now();
    }
    ssize_t n = ::read(fd_, base + kept, cap - kept);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (draining) {
        auto now = Clock::now();
        if (now - last_data >= std::chrono::milliseconds(kQuietMs) || now - drain_start >= kDrainLimit) break;
      }
      pollfd pfd{fd_, POLLIN, 0};
      ::poll(&pfd, 1, draining ? 50 : 100);
      continue;
    }
    if (n < 0) {
      int e = errno;
      stop_on(fail(e, fmt::format("reading {}: {}", path_, std::strerror(e))));
      break;
    }
    if (n == 0) {
      stop_on(fail(EPIPE, fmt::format("{} ended (was the mount taken away?)", path_)));
      break;
    }
    last_data = Clock::now();
    const std::size_t total = kept + static_cast<std::size_t>(n);
    const std::size_t used = consume(base, total);
    kept = total - used;
    if (kept != 0) std::memmove(base, base + used, kept);
    if (kept == cap) {
      stop_on(fail(EMSGSIZE, fmt::format("{}: a record larger than the read buffer", path_)));
      break;
    }
  }
}

}  // namespace eventfs::record
