// /proc/self/mountinfo, read for the id, parent, mount point and type of each mount.
#pragma once

#include <string>
#include <vector>

namespace eventfs {

struct MountInfoEntry {
  long id = 0;      // the mount's id, unique while it is mounted
  long parent = 0;  // the id of the mount it sits on
  std::string mount_point;  // unescaped (mountinfo writes a blank as \040)
  std::string fstype;       // "tracefs", "fuse.eventfs", ...
};

std::vector<MountInfoEntry> parse_mountinfo(const std::string& text);

}  // namespace eventfs
