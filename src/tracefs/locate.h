// Finding (and if need be mounting) the kernel's tracefs.
#pragma once

#include <string>

#include "error/result.h"

namespace eventfs {

inline constexpr const char* kDefaultTracefsMount = "/sys/kernel/tracing";

// The mount point of a tracefs in `mountinfo` text (/proc/self/mountinfo
// format); empty if there is none. Prefers /sys/kernel/tracing.
std::string tracefs_in_mountinfo(const std::string& mountinfo);

// Finds tracefs in /proc/self/mountinfo; if none is mounted, mounts one at
// /sys/kernel/tracing. Its path, or why it cannot be had.
Result<std::string> locate_tracefs();

// The tracefs (or copy of its tree) given with -o tracefs=DIR, made absolute;
// an error when it has no events/ directory.
Result<std::string> given_tracefs(const std::string& dir);

}  // namespace eventfs
