// /proc/self/mountinfo, read for the mount point and type of each mount.
#pragma once

#include <string>
#include <vector>

namespace eventfs {

struct MountInfoEntry {
  std::string mount_point;  // unescaped (mountinfo writes a blank as \040)
  std::string fstype;       // "tracefs", "fuse.eventfs", ...
};

std::vector<MountInfoEntry> parse_mountinfo(const std::string& text);

}  // namespace eventfs
