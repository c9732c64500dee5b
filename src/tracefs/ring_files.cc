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

int RingFiles::open_raw_pipe(int cpu, std::string& error) const {
  const std::string path = raw_pipe_path(cpu);
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) error = fmt::format("{}: {}", path, std::strerror(errno));
  return fd;
}

int RingFiles::open_trace_pipe(std::string& error) const {
  const std::string path = path_ + "/trace_pipe";
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) error = fmt::format("{}: {}", path, std::strerror(errno));
  return fd;
}

bool RingFiles::read_overrun(int cpu, std::uint64_t& out) const {
  // Read on every drain that sees a loss: one open and one read, no allocation.
  char path[4096];
  int len = std::snprintf(path, sizeof path, "%s/per_cpu/cpu%d/stats", path_.c_str(), cpu);
  if (len <= 0 || static_cast<std::size_t>(len) >= sizeof path) return false;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* p = std::strstr(buf, "\noverrun:");
  if (p) ++p;
  else if (std::strncmp(buf, "overrun:", 8) == 0) p = buf;
  if (!p) return false;
  out = std::strtoull(p + 8, nullptr, 10);
  return true;
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
