#include "recorder/cpu_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "eventfs/record.h"
#include "recorder/cpu_stats_lines.h"

namespace eventfs::recorder {

CpuRecorder::CpuRecorder(const MountLayout& layout, int cpu, RecordControl& control)
    : layout_(layout), cpu_(cpu), control_(control) {
  for (const auto& e : layout.events) {
    if (e.id < kDenseIds) {
      if (dense_kinds_.size() <= e.id) dense_kinds_.resize(e.id + 1);
      dense_kinds_[e.id] = Kind{e.size, e.end, e.align, true};
    } else {
      kinds_[e.id] = Kind{e.size, e.end, e.align, true};
    }
  }
}

CpuRecorder::~CpuRecorder() {
  if (fd_ >= 0) ::close(fd_);
}

Status CpuRecorder::open(std::unique_ptr<CpuSink> sink) {
  sink_ = std::move(sink);
  path_ = fmt::format("{}/per_cpu/cpu{}/trace_pipe_raw", layout_.mount, cpu_);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot open {}: {}", path_, std::strerror(e)));
  }
  return {};
}

bool CpuRecorder::nothing_unread() const { return recorder::nothing_unread(layout_.mount, cpu_); }

Status CpuRecorder::finish() {
  if (!sink_) {
    if (error_) return *error_;
    return {};
  }
  if (Status s = sink_->finish(); !s) stop_on(std::move(s).error());
  bytes_.store(sink_->bytes_written(), std::memory_order_relaxed);
  if (error_) return *error_;
  return {};
}

void CpuRecorder::stop_on(Error e) {
  if (!error_) error_ = std::move(e);
  control_.failed = true;
}

Status CpuRecorder::write_record(const unsigned char* p) {
  const auto* h = reinterpret_cast<const eventfs_record_header*>(p);
  // A lost-events record stamped 0 has no time (eventfs dropped records
  // from a queue that held none when it was read): it is kept, as it may
  // be the recording's own.
  const bool timeless_loss = h->id == EVENTFS_ID_LOST && h->timestamp == 0;
  if (h->timestamp < start_ && !timeless_loss) {
    bump(older_, 1);
    return {};
  }
  if (h->timestamp >= end_.load(std::memory_order_relaxed) && !timeless_loss) {
    past_end_ = true;
    bump(newer_, 1);
    return {};
  }
  if (h->id == EVENTFS_ID_LOST) {
    eventfs_lost l;
    std::memcpy(&l, EVENTFS_RECORD_PAYLOAD(h), sizeof l);
    if (Status s = sink_->add_lost(h->timestamp, l.count); !s) return s;
    bump(lost_, l.count);
    return {};
  }
  const Kind* k = kind_of(h->id);
  if (!k) {
    // An event someone else enabled on the same mount: not asked for.
    bump(skipped_, 1);
    return {};
  }
  const std::size_t have = EVENTFS_RECORD_PAYLOAD_SIZE(h);
  if (Status s = sink_->add_event(h->timestamp, h->id, h->pid, EVENTFS_RECORD_PAYLOAD(h),
                                   std::min(have, k->size), k->end, k->align);
      !s)
    return s;
  bump(events_, 1);
  return {};
}

std::size_t CpuRecorder::take(const unsigned char* p, std::size_t n) {
  std::size_t at = 0;
  while (at < n && !error_) {
    const auto* h = reinterpret_cast<const eventfs_record_header*>(p + at);
    const std::size_t avail = n - at;
    if (avail < sizeof *h || h->size > avail) break;  // not a whole record
    if (eventfs_record_check(h, avail) == 0) {
      stop_on(fail(EPROTO, fmt::format("{}: a record this eventfs-record cannot read (version {}, size {})", path_,
                                       h->version, h->size)));
      break;
    }
    if (Status s = write_record(p + at); !s) {
      stop_on(std::move(s).error());
      break;
    }
    at += h->size;
  }
  bytes_.store(sink_->bytes_written(), std::memory_order_relaxed);
  return at;
}

CpuRecorder::ReadResult CpuRecorder::read_into(unsigned char* buf, std::size_t cap) {
  last_read_ = 0;
  if (error_) return ReadResult::kDone;
  ssize_t n;
  do n = ::read(fd_, buf, cap);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return ReadResult::kEmpty;
  if (n < 0) {
    int e = errno;
    stop_on(fail(e, fmt::format("reading {}: {}", path_, std::strerror(e))));
    return ReadResult::kDone;
  }
  if (n == 0) {
    stop_on(fail(EPIPE, fmt::format("{} ended: eventfs stopped or its mount was taken away", path_)));
    return ReadResult::kDone;
  }
  last_read_ = static_cast<std::size_t>(n);
  const std::size_t used = take(buf, static_cast<std::size_t>(n));
  if (!error_ && used != static_cast<std::size_t>(n))
    stop_on(fail(EMSGSIZE, fmt::format("{}: a record larger than the read buffer ({} bytes)", path_, cap)));
  return error_ ? ReadResult::kDone : ReadResult::kData;
}

}  // namespace eventfs::recorder
