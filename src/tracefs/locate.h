// Finding (and if need be mounting) the kernel's tracefs.
#pragma once

#include <string>

namespace eventfs {

inline constexpr const char* kDefaultTracefsMount = "/sys/kernel/tracing";

// The mount point of a tracefs in `mountinfo` text (/proc/self/mountinfo
// format); empty if there is none. Prefers /sys/kernel/tracing.
std::string tracefs_in_mountinfo(const std::string& mountinfo);

// Finds tracefs in /proc/self/mountinfo; if none is mounted, mounts one at
// /sys/kernel/tracing. Returns 0 or an errno, and a one-line message on error.
int locate_tracefs(std::string& path, std::string& message);

// The tracefs (or copy of its tree) given with -o tracefs=DIR, made absolute:
// 0, or an errno and a one-line message when it has no events/ directory.
int given_tracefs(const std::string& dir, std::string& path, std::string& message);

}  // namespace eventfs
