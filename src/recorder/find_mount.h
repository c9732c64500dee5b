// Which eventfs mount eventfs-record reads when -m is not given: the
// canonical /sys/kernel/events if eventfs is mounted there, else the one
// eventfs mount there is.
#pragma once

#include <string>

#include "error/result.h"

namespace eventfs::recorder {

inline constexpr const char* kCanonicalMount = "/sys/kernel/events";

// From the text of /proc/self/mountinfo: the mount point, or ENOENT with a
// one-line reason (none mounted, or several and none canonical).
Result<std::string> find_eventfs_mount(const std::string& mountinfo);

}  // namespace eventfs::recorder
