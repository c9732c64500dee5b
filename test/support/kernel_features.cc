// The running kernel's features, from its release.
#include "support/kernel_features.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "support/files.h"
#include "support/mounted_eventfs.h"
#include "support/stream_util.h"

namespace eventfs_it {

bool kernel_at_least(int major, int minor) {
  utsname u{};
  if (::uname(&u) != 0) return false;
  int ma = 0, mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

bool kernel_maps_rings() { return kernel_at_least(6, 10); }

bool kernel_has_subbuf_size() { return kernel_at_least(6, 8); }

bool kernel_reads_switch_state_per_probe() { return !kernel_at_least(5, 18); }

std::string reader_in_use(const std::string& asked) {
  if (asked == "auto") return "read";
  return asked;
}

::testing::AssertionResult MmapRefusedAsDocumented(const MountedEventfs& m, const std::string& stream) {
  int fd = ::open(stream.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return ::testing::AssertionFailure() << "open " << stream << ": " << std::strerror(errno);
  // Until the daemon's first try to open the rings has failed, a
  // non-blocking read finds nothing yet (EAGAIN).
  char buf[4096];
  ssize_t n = -1;
  int e = EAGAIN;
  stream::wait_until(
      [&] {
        n = ::read(fd, buf, sizeof buf);
        e = errno;
        return n >= 0 || e != EAGAIN;
      },
      5s);
  ::close(fd);
  if (n >= 0 || e != EIO)
    return ::testing::AssertionFailure() << "read of " << stream << " with -o reader=mmap on a kernel before 6.10: "
                                         << (n >= 0 ? std::to_string(n) + " bytes" : std::strerror(e))
                                         << ", want EIO";
  const std::string log = slurp(m / "error_log");
  if (log.find("cannot read the ring buffer: ") == std::string::npos ||
      log.find("(the kernel maps trace_pipe_raw from Linux 6.10)") == std::string::npos)
    return ::testing::AssertionFailure() << "error_log does not say why the rings cannot be read: " << log;
  return ::testing::AssertionSuccess() << stream << ": EIO, and error_log says why";
}

}  // namespace eventfs_it
