#include "recorder/find_mount.h"

#include <cerrno>
#include <set>

#include "tracefs/mountinfo.h"

namespace eventfs::recorder {

Result<std::string> find_eventfs_mount(const std::string& mountinfo) {
  std::set<std::string> points;  // (stacked mounts share one path)
  for (const auto& m : parse_mountinfo(mountinfo))
    if (m.fstype == "fuse.eventfs") points.insert(m.mount_point);
  if (points.count(kCanonicalMount)) return std::string(kCanonicalMount);
  if (points.size() == 1) return *points.begin();
  if (points.empty()) return fail(ENOENT, "no eventfs mount found: mount one (eventfs MOUNTPOINT) or give -m MOUNT");
  std::string why = "several eventfs mounts:";
  for (const auto& p : points) why += " " + p;
  return fail(ENOENT, why + "; choose one with -m MOUNT");
}

}  // namespace eventfs::recorder
