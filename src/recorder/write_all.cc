#include "recorder/write_all.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace eventfs::recorder {

Status write_all(int fd, const void* data, std::size_t size, const std::string& path) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : ENOSPC;
      return fail(e, fmt::format("writing {}: {}", path, std::strerror(e)));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace eventfs::recorder
