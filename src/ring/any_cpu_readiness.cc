#include "ring/any_cpu_readiness.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "ring/ring.h"

namespace eventfs {

int open_any_cpu_readiness(const std::string& instance_path, std::string& error) {
  const std::string path = instance_path + "/trace_pipe";
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return -1;
  }
  // (A plain file polls readable at all times.)
  if (!is_tracefs_file(fd)) {
    ::close(fd);
    error = path + ": not a tracefs file";
    return -1;
  }
  return fd;
}

}  // namespace eventfs
