#include "ring/ring.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ring/lost.h"
#include "ring/mapped_reader.h"
#include "ring/pending_ring.h"
#include "ring/subbuf.h"
#include "ring/trace_mmap_abi.h"
#include "tracefs/instance.h"

namespace eventfs {
namespace {

// The kernel's long size, from events/header_page, else this build's.
unsigned kernel_long_size(const RingFiles& files) {
  if (unsigned n = header_page_long_size(files.header_page())) return n;
  return sizeof(long);
}

// Why the kernel's events/header_event describes an event header the walk
// does not know; "" if it does, or where there is no such file (a copy of
// the tree for tests).
std::string event_header_problem(const RingFiles& files) {
  std::string where;
  std::string text = files.header_event(&where);
  if (text.empty()) return {};
  std::string why = header_event_mismatch(text);
  return why.empty() ? why : fmt::format("{}: an event header eventfs cannot walk ({})", where, why);
}

// Sub-buffer size for read(): buffer_subbuf_size_kb (Linux >= 6.8), else a page.
std::uint32_t read_subbuf_size(const RingFiles& files) {
  if (std::uint32_t n = files.subbuf_bytes()) return n;
  return static_cast<std::uint32_t>(sysconf(_SC_PAGESIZE));
}

class FdHolder {
 public:
  explicit FdHolder(int fd) : fd_(fd) {}
  ~FdHolder() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdHolder(const FdHolder&) = delete;
  FdHolder& operator=(const FdHolder&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes the descriptor held (if any) and holds `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

class ReadRing final : public CpuRing {
 public:
  ReadRing(int fd, int cpu, unsigned long_size, std::uint32_t subbuf, RingFiles files)
      : fd_(fd), cpu_(cpu), parser_(long_size), scan_(long_size), buf_(subbuf), files_(std::move(files)) {
    if (Result<std::uint64_t> o = files_.read_overrun(cpu_)) {
      has_overrun_ = true;
      opened_overrun_ = *o;
    }
    lost_.open(opened_overrun_);
    open_batch();
  }

  Result<std::size_t> drain(RingSink& sink, std::size_t max) override {
    std::size_t n = 0;
    while (n < max) {
      if (!loaded_ || from_ >= parser_.data_size()) {
        // A sub-buffer well short of full came from the page the writer is
        // on: caught up. Reading on would take its new events a few at a
        // time (the kernel copies a partly read page event by event); the
        // next drain, when the ring is buffer_percent full, gets whole
        // sub-buffers (swapped, not copied). Except for the first short
        // one after a catch-up: the rest of the page that was caught up
        // on, which the writer has filled since and left (in a storm, a
        // drainer that stopped there would let the ring overrun).
        if (loaded_ && short_ && !resumed_) {
          loaded_ = false;
          resumed_ = true;
          return n;
        }
        if (loaded_) resumed_ = false;
        loaded_ = false;
        const std::uint8_t* at = nullptr;
        std::size_t r = 0;
        std::optional<std::uint64_t> overrun;  // the counter for a mark without a count
        bool spliced = false;
        if (Result<std::size_t> b = next_batched(at, overrun); !b) {
          return std::move(b).error();
        } else if (*b != 0) {
          r = *b;
          spliced = true;
        } else {
          const ssize_t got = ::read(fd_.get(), buf_.data(), buf_.size());
          if (got < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return n;
            const int e = errno;
            return fail(e, fmt::format("read(2): {}", std::strerror(e)));
          }
          if (got == 0) return n;
          at = buf_.data();
          r = static_cast<std::size_t>(got);
        }
        if (Status s = parser_.load(at, r); !s)
          return fail(EIO, fmt::format("the {} bytes {} gave: {}", r, spliced ? "splice(2)" : "read(2)", s.reason()));
        loaded_ = true;
        // (A spliced sub-buffer is one the writer has left, even when it
        // is short: the rest of one read before, or one a large event did
        // not fit in.)
        short_ = !spliced && parser_.data_size() < subbuf_size() / 4 * 3;
        from_ = 0;
        // The stats file is read only for a mark without a count.
        std::int64_t mark = parser_.missed();
        if (mark < 0 && has_overrun_ && !spliced)
          if (Result<std::uint64_t> o = files_.read_overrun(cpu_)) overrun = *o;
        lost_.subbuf(sink, stats_, parser_.timestamp(), mark, overrun ? &*overrun : nullptr, false);
      }
      std::size_t got = parser_.walk(sink, from_, max - n);
      n += got;
      stats_.entries += got;
    }
    return n;
  }
  int poll_fd() const override { return fd_.get(); }
  // (A counter below `overrun` was reset since, as writing the instance's
  // trace file does: what it counts was all overwritten while no stream was
  // open.)
  void count_losses_from(std::uint64_t overrun) override {
    lost_.open(has_overrun_ && opened_overrun_ < overrun ? 0 : overrun);
  }
  const char* mode() const override { return "read"; }
  RingStats stats() const override {
    RingStats s = stats_;
    if (!has_overrun_) return s;
    if (Result<std::uint64_t> o = files_.read_overrun(cpu_)) {
      s.overrun = lost_.growth(*o);
      s.overrun_counter = *o;
    }
    return s;
  }
  int cpu() const override { return cpu_; }
  std::uint32_t subbuf_size() const override {
    return static_cast<std::uint32_t>(buf_.size());
  }
  // Not while spliced sub-buffers, taken from the kernel, wait here: they
  // are no longer in the ring for the kernel to announce.
  bool settled() const override { return batch_next_ >= batch_bytes_; }

 private:
  // Whole sub-buffers are taken kBatchBytes at a time where the kernel
  // lets them be spliced: splice(2) moves every sub-buffer the writer has
  // left (never the one it is on) into a pipe in one call, and one read(2)
  // of the pipe copies them out; read(2) of trace_pipe_raw takes one
  // sub-buffer a call. Fewer system calls for the same copies. What
  // splice leaves (the writer's sub-buffer) is read(2) as before.
  static constexpr std::size_t kBatchBytes = 64u << 10;  // a pipe's default size
  void open_batch() {
    const std::size_t subbuf = buf_.size();
    if (subbuf == 0 || kBatchBytes / subbuf < 2 || !is_tracefs_fd(fd_.get())) return;
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return;
    pipe_r_.reset(p[0]);
    pipe_w_.reset(p[1]);
    if (::fcntl(p[1], F_GETPIPE_SZ) < static_cast<int>(kBatchBytes) &&
        ::fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kBatchBytes)) < static_cast<int>(kBatchBytes)) {
      pipe_r_.reset();
      pipe_w_.reset();
      return;
    }
    batch_.resize(kBatchBytes / subbuf * subbuf);
  }
  // The next sub-buffer taken by splice: its bytes (`at` points to them),
  // or 0 when none is (the writer is on the only one left, or the kernel
  // does not splice this file: read(2) then). For one whose lost mark has
  // no count, `overrun` is the kernel's counter when the batch was taken,
  // less the counts the later sub-buffers of the batch store: they were
  // overwritten before the batch was taken too, and are reported with
  // their own sub-buffers.
  Result<std::size_t> next_batched(const std::uint8_t*& at, std::optional<std::uint64_t>& overrun) {
    const std::size_t subbuf = buf_.size();
    if (batch_next_ >= batch_bytes_) {
      if (!pipe_w_) return std::size_t{0};
      if (Status taken = take_batch(); !taken) return std::move(taken).error();
      if (batch_bytes_ == 0) return std::size_t{0};
    }
    const std::size_t index = batch_next_ / subbuf;
    if (batch_marks_[index] < 0 && batch_overrun_) {
      std::uint64_t later = 0;
      for (std::size_t i = index + 1; i < batch_marks_.size(); ++i)
        if (batch_marks_[i] > 0) later += static_cast<std::uint64_t>(batch_marks_[i]);
      overrun = *batch_overrun_ > later ? *batch_overrun_ - later : 0;
    }
    at = batch_.data() + batch_next_;
    const std::size_t bytes = std::min(subbuf, batch_bytes_ - batch_next_);
    batch_next_ += bytes;
    ++stats_.spliced;
    return bytes;
  }
  // One splice(2) of the sub-buffers the writer has left, read out of the
  // pipe into batch_ (batch_bytes_ stays 0 when there were none).
  Status take_batch() {
    const std::size_t subbuf = buf_.size();
    batch_next_ = batch_bytes_ = 0;
    batch_marks_.clear();
    batch_overrun_.reset();
    ssize_t moved;
    do moved = ::splice(fd_.get(), nullptr, pipe_w_.get(), nullptr, batch_.size(), SPLICE_F_NONBLOCK);
    while (moved < 0 && errno == EINTR);
    if (moved <= 0) {
      // A file the kernel does not splice: read(2) from now on. (Other
      // errors, ENOMEM say, are tried again at the next batch.)
      if (moved < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF)) {
        pipe_r_.reset();
        pipe_w_.reset();
      }
      return {};
    }
    // The pipe now holds `moved` bytes of the ring, consumed: they are
    // read out whole, or the ring's records would be lost.
    std::size_t got = 0;
    while (got < static_cast<std::size_t>(moved)) {
      const ssize_t r = ::read(pipe_r_.get(), batch_.data() + got, static_cast<std::size_t>(moved) - got);
      if (r > 0) {
        got += static_cast<std::size_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      const int e = r < 0 ? errno : EIO;
      pipe_r_.reset();
      pipe_w_.reset();
      return fail(e, fmt::format("read(2) of the {} bytes splice(2) took from the ring: {}", moved,
                                 r < 0 ? std::strerror(e) : "the pipe ended"));
    }
    batch_bytes_ = got;
    ++stats_.splices;
    bool unknown = false;
    for (std::size_t off = 0; off < got; off += subbuf) {
      std::int64_t mark = 0;
      if (scan_.load(batch_.data() + off, std::min(subbuf, got - off))) mark = scan_.missed();
      batch_marks_.push_back(mark);
      unknown |= mark < 0;
    }
    if (unknown && has_overrun_)
      if (Result<std::uint64_t> o = files_.read_overrun(cpu_)) batch_overrun_ = *o;
    return {};
  }

  FdHolder fd_;
  int cpu_;
  SubbufParser parser_;
  SubbufParser scan_;  // reads the lost marks of a batch as it is taken
  std::vector<std::uint8_t> buf_;  // one sub-buffer, kept between drains
  // Sub-buffers splice(2) took, walked one by one ([batch_next_, batch_bytes_) still to go),
  // their lost marks, and the kernel's overrun counter when they were taken
  // (read only when one of them has a mark without a count).
  FdHolder pipe_r_{-1}, pipe_w_{-1};
  std::vector<std::uint8_t> batch_;
  std::size_t batch_next_ = 0, batch_bytes_ = 0;
  std::vector<std::int64_t> batch_marks_;
  std::optional<std::uint64_t> batch_overrun_;
  RingFiles files_;
  bool has_overrun_ = false;
  std::uint64_t opened_overrun_ = 0;  // the counter when the ring was opened
  bool loaded_ = false;
  bool short_ = false;  // the loaded sub-buffer is not full
  bool resumed_ = false;  // the first sub-buffer after a catch-up is being read
  std::uint32_t from_ = 0;
  LostAccounting lost_;
  RingStats stats_;
};

class MmapRing final : public CpuRing {
 public:
  // The ring mapped through `fd` (which it then owns), or why it cannot be
  // (and `fd` stays the caller's).
  static Result<std::unique_ptr<CpuRing>> open(int fd, int cpu, unsigned long_size) {
    // Only tracefs's trace_pipe_raw speaks the protocol (a copy of the tree
    // for tests is plain files).
    if (!is_tracefs_fd(fd)) return fail(ENOTSUP, "not a tracefs file");
    long page = sysconf(_SC_PAGESIZE);
    void* m = mmap(nullptr, static_cast<std::size_t>(page), PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return mmap_failed("mmap of the meta page");
    auto* meta = static_cast<const ring_abi::TraceBufferMeta*>(m);
    std::size_t meta_len = meta->meta_page_size;
    if (meta->meta_struct_len < offsetof(ring_abi::TraceBufferMeta, read) || meta_len == 0 ||
        meta_len % static_cast<std::size_t>(page) != 0 || meta->subbuf_size < 64 ||
        meta->subbuf_size % 8 != 0 || meta->nr_subbufs < 2 || meta->reader.id >= meta->nr_subbufs) {
      Error e = fail(EPROTO, fmt::format("unexpected meta page (meta_page_size {}, meta_struct_len {}, subbuf_size {}, nr_subbufs {})",
                                         meta->meta_page_size, meta->meta_struct_len, meta->subbuf_size, meta->nr_subbufs));
      munmap(m, static_cast<std::size_t>(page));
      return e;
    }
    if (meta_len != static_cast<std::size_t>(page)) {
      munmap(m, static_cast<std::size_t>(page));
      m = mmap(nullptr, meta_len, PROT_READ, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) return mmap_failed("mmap of the meta page");
      meta = static_cast<const ring_abi::TraceBufferMeta*>(m);
    }
    std::size_t data_len = static_cast<std::size_t>(meta->subbuf_size) * meta->nr_subbufs;
    void* d = mmap(nullptr, data_len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(meta_len));
    if (d == MAP_FAILED) {
      Error e = mmap_failed("mmap of the sub-buffers");
      munmap(m, meta_len);
      return e;
    }
    return std::unique_ptr<CpuRing>(new MmapRing(fd, cpu, long_size, m, meta_len, d, data_len));
  }

  ~MmapRing() override {
    munmap(data_, data_len_);
    munmap(meta_, meta_len_);
  }

  Result<std::size_t> drain(RingSink& sink, std::size_t max) override { return reader_.drain(sink, max); }
  int poll_fd() const override { return fd_.get(); }
  void count_losses_from(std::uint64_t overrun) override { reader_.count_losses_from(overrun); }
  const char* mode() const override { return "mmap"; }
  RingStats stats() const override { return reader_.stats(); }
  int cpu() const override { return cpu_; }
  std::uint32_t subbuf_size() const override { return reader_.subbuf_size(); }
  bool settled() const override { return reader_.settled(); }

 private:
  MmapRing(int fd, int cpu, unsigned long_size, void* meta, std::size_t meta_len, void* data,
           std::size_t data_len)
      : fd_(fd),
        cpu_(cpu),
        meta_(meta),
        meta_len_(meta_len),
        data_(data),
        data_len_(data_len),
        reader_(static_cast<const ring_abi::TraceBufferMeta*>(meta), static_cast<const std::uint8_t*>(data),
                long_size, &MmapRing::get_reader, this) {}

  static Error mmap_failed(const char* what) {
    const int e = errno;
    return fail(e, fmt::format("{}: {}", what, std::strerror(e)));
  }

  static Status get_reader(void* self) {
    int fd = static_cast<MmapRing*>(self)->fd_.get();
    for (;;) {
      if (ioctl(fd, ring_abi::kGetReader) == 0) return {};
      if (const int e = errno; e != EINTR) return fail(e, std::strerror(e));
    }
  }

  FdHolder fd_;
  int cpu_;
  void* meta_;
  std::size_t meta_len_;
  void* data_;
  std::size_t data_len_;
  MappedReader reader_;
};

}  // namespace

Result<ReaderMode> parse_reader_mode(std::string_view text) {
  if (text == "auto") return ReaderMode::Auto;
  if (text == "mmap") return ReaderMode::Mmap;
  if (text == "read") return ReaderMode::Read;
  return fail(EINVAL, "expected auto, mmap or read");
}

const char* reader_mode_name(ReaderMode mode) {
  switch (mode) {
    case ReaderMode::Auto: return "auto";
    case ReaderMode::Mmap: return "mmap";
    case ReaderMode::Read: return "read";
  }
  return "?";
}

namespace {

// Whether the kernel has a ring buffer behind this trace_pipe_raw: it has
// none for a CPU that has not been online since the instance was made, and
// then polls POLLERR at once (and refuses mmap with EINVAL, read with ENODEV).
bool kernel_has_ring(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) <= 0 || !(p.revents & POLLERR);
}

// open_cpu_ring() without the PendingCpuRing: no ring (a null one) while the
// kernel has none for the CPU (PendingCpuRing::Opener).
Result<std::unique_ptr<CpuRing>> open_ring_now(const RingFiles& files, int cpu, ReaderMode mode) {
  const std::string path = files.raw_pipe_path(cpu);
  unsigned long_size = kernel_long_size(files);
  if (std::string why = event_header_problem(files); !why.empty()) return fail(EPROTO, std::move(why));
  bool absent = false;
  // Auto reads with read(2): every kernel that maps the rings (6.10 to at
  // least 6.18) marks each event of a mapped reader sub-buffer read one at
  // a time in GET_READER, which costs more than read(2)'s swap of a whole
  // sub-buffer (eventfs(8), -o reader=, has the figures).
  if (mode == ReaderMode::Auto) mode = ReaderMode::Read;
  auto open_fd = [&]() -> Result<int> {
    Result<int> fd = files.open_raw_pipe(cpu);
    if (fd && !kernel_has_ring(*fd)) {
      ::close(*fd);
      absent = true;
      return -1;
    }
    return fd;
  };
  if (mode == ReaderMode::Mmap) {
    Result<int> fd = open_fd();
    if (!fd) return std::move(fd).error();
    if (absent) return std::unique_ptr<CpuRing>();
    Result<std::unique_ptr<CpuRing>> ring = MmapRing::open(*fd, cpu, long_size);
    if (ring) return ring;
    ::close(*fd);
    return fail(ring.code(), fmt::format("{}: {} (the kernel maps trace_pipe_raw from Linux 6.10)", path, ring.reason()));
  }
  Result<int> fd = open_fd();
  if (!fd) return std::move(fd).error();
  if (absent) return std::unique_ptr<CpuRing>();
  return std::unique_ptr<CpuRing>(std::make_unique<ReadRing>(*fd, cpu, long_size, read_subbuf_size(files), files));
}

}  // namespace

Result<std::unique_ptr<CpuRing>> open_cpu_ring(const RingFiles& files, int cpu, ReaderMode mode) {
  Result<std::unique_ptr<CpuRing>> ring = open_ring_now(files, cpu, mode);
  if (!ring || *ring) return ring;
  return std::unique_ptr<CpuRing>(std::make_unique<PendingCpuRing>(
      cpu, [files, cpu, mode] { return open_ring_now(files, cpu, mode); }));
}

}  // namespace eventfs
