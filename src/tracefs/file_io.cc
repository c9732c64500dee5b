#include "tracefs/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace eventfs {
namespace {

Error failed(const std::string& path, int e) { return fail(e, fmt::format("{}: {}", path, std::strerror(e))); }

}  // namespace

Result<std::string> read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(path, errno);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return failed(path, e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Status write_once(const std::string& path, std::string_view data, int extra_flags) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | extra_flags);
  if (fd < 0) return failed(path, errno);
  int err = 0;
  if (!data.empty()) {
    ssize_t n;
    do n = ::write(fd, data.data(), data.size());
    while (n < 0 && errno == EINTR);
    if (n < 0) err = errno;
  }
  ::close(fd);
  if (err) return failed(path, err);
  return {};
}

}  // namespace eventfs
