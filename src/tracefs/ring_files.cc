#include "tracefs/ring_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs {

std::string RingFiles::raw_pipe_path(int cpu) const { return fmt::format("{}/per_cpu/cpu{}/trace_pipe_raw", path_, cpu); }

namespace {
Result<int> open_pipe(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail(errno, fmt::format("{}: {}", path, std::strerror(errno)));
  return fd;
}
}  // namespace

Result<int> RingFiles::open_raw_pipe(int cpu) const { return open_pipe(raw_pipe_path(cpu)); }

Result<int> RingFiles::open_trace_pipe() const { return open_pipe(path_ + "/trace_pipe"); }

Result<std::uint64_t> RingFiles::read_overrun(int cpu) const {
  // Read on every drain that sees a loss: one open and one read, no
  // allocation (but for a failure's reason).
  char path[4096];
  int len = std::snprintf(path, sizeof path, "%s/per_cpu/cpu%d/stats", path_.c_str(), cpu);
  if (len <= 0 || static_cast<std::size_t>(len) >= sizeof path) return fail(ENAMETOOLONG, "stats path too long");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno, fmt::format("{}: {}", path, std::strerror(errno)));
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  const int read_errno = n < 0 ? errno : EIO;
  ::close(fd);
  if (n <= 0) return fail(read_errno, fmt::format("{}: nothing read", path));
  buf[n] = 0;
  const char* p = std::strstr(buf, "\noverrun:");
  if (p) ++p;
  else if (std::strncmp(buf, "overrun:", 8) == 0) p = buf;
  if (!p) return fail(EIO, fmt::format("{}: no overrun: line", path));
  return static_cast<std::uint64_t>(std::strtoull(p + 8, nullptr, 10));
}

Result<std::string> RingFiles::read_stats(int cpu) const {
  const std::string path = fmt::format("{}/per_cpu/cpu{}/stats", path_, cpu);
  auto text = read_whole_file(path);
  if (!text) return fail(text.code(), fmt::format("{}: {}", path, std::strerror(text.code())));
  return text;
}

std::string RingFiles::first_of(const char* rel, std::string* where) const {
  for (const std::string& p : {path_ + "/" + rel, path_ + "/../../" + rel}) {
    auto text = read_whole_file(p);
    if (text && !text->empty()) {
      if (where) *where = p;
      return std::move(text).value();
    }
  }
  return {};
}

std::string RingFiles::header_page() const { return first_of("events/header_page", nullptr); }

std::string RingFiles::header_event(std::string* where) const { return first_of("events/header_event", where); }

std::string RingFiles::saved_cmdlines() const { return first_of("saved_cmdlines", nullptr); }

std::uint32_t RingFiles::subbuf_bytes() const {
  auto kb = read_whole_file(path_ + "/buffer_subbuf_size_kb");
  if (!kb) return 0;
  unsigned long v = std::strtoul(kb->c_str(), nullptr, 10);
  return v > 0 && v <= 1024 ? static_cast<std::uint32_t>(v * 1024) : 0;
}

}  // namespace eventfs
