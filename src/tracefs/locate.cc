#include "tracefs/locate.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cstdlib>

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

int given_tracefs(const std::string& dir, std::string& path, std::string& message) {
  // The daemon moves to / when it goes to the background: keep the path absolute.
  char* real = realpath(dir.c_str(), nullptr);
  path = real ? real : dir;
  std::free(real);
  struct stat st;
  const std::string events = path + "/events";
  if (stat(events.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    int e = errno ? errno : ENOTDIR;
    message = "tracefs=" + path + ": no events/ directory there (" + std::strerror(e) + ")";
    return e;
  }
  return 0;
}

}  // namespace eventfs
