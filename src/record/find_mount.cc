#include "record/find_mount.h"

#include <set>

#include "tracefs/mountinfo.h"

namespace eventfs::record {

std::string find_eventfs_mount(const std::string& mountinfo, std::string& why) {
  std::set<std::string> points;  // (stacked mounts share one path)
  for (const auto& m : parse_mountinfo(mountinfo))
    if (m.fstype == "fuse.eventfs") points.insert(m.mount_point);
  if (points.count(kCanonicalMount)) return kCanonicalMount;
  if (points.size() == 1) return *points.begin();
  if (points.empty()) {
    why = "no eventfs mount found: mount one (eventfs MOUNTPOINT) or give -m MOUNT";
  } else {
    why = "several eventfs mounts:";
    for (const auto& p : points) why += " " + p;
    why += "; choose one with -m MOUNT";
  }
  return "";
}

}  // namespace eventfs::record
