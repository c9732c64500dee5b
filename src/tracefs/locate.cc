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

Result<std::string> locate_tracefs() {
  auto mountinfo = read_whole_file("/proc/self/mountinfo");
  std::string path = tracefs_in_mountinfo(mountinfo ? *mountinfo : std::string());
  if (!path.empty()) return path;
  if (mount("nodev", kDefaultTracefsMount, "tracefs", 0, nullptr) != 0) {
    int e = errno;
    return fail(e, fmt::format("tracefs is not mounted, and mounting it at {} failed: {}", kDefaultTracefsMount,
                               std::strerror(e)));
  }
  return std::string(kDefaultTracefsMount);
}

Result<std::string> given_tracefs(const std::string& dir) {
  // The daemon moves to / when it goes to the background: keep the path absolute.
  char* real = realpath(dir.c_str(), nullptr);
  std::string path = real ? real : dir;
  std::free(real);
  struct stat st;
  const std::string events = path + "/events";
  if (stat(events.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    int e = errno ? errno : ENOTDIR;
    return fail(e, "tracefs=" + path + ": no events/ directory there (" + std::strerror(e) + ")");
  }
  return path;
}

}  // namespace eventfs
