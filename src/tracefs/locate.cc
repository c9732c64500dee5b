#include "tracefs/locate.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/file_io.h"
#include "tracefs/mountinfo.h"

namespace eventfs {

std::string tracefs_in_mountinfo(const std::string& mountinfo) {
  std::string found;
  for (const auto& m : parse_mountinfo(mountinfo)) {
    if (m.fstype != "tracefs") continue;
    if (m.mount_point == kDefaultTracefsMount) return m.mount_point;
    if (found.empty()) found = m.mount_point;
  }
  return found;
}

int locate_tracefs(std::string& path, std::string& message) {
  std::string mountinfo;
  read_whole_file("/proc/self/mountinfo", mountinfo);
  path = tracefs_in_mountinfo(mountinfo);
  if (!path.empty()) return 0;
  if (mount("nodev", kDefaultTracefsMount, "tracefs", 0, nullptr) != 0) {
    int e = errno;
    message = fmt::format("tracefs is not mounted, and mounting it at {} failed: {}",
                          kDefaultTracefsMount, std::strerror(e));
    return e;
  }
  path = kDefaultTracefsMount;
  return 0;
}

}  // namespace eventfs
