// The test's own /proc/self/mountinfo reader (independent of the daemon's parser).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/files.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// Mount table.

struct MountEntry {
  std::string mount_point;
  std::string fstype;
  std::string source;
  std::string options;
};

std::string unescape_mountinfo(const std::string& s);

std::vector<MountEntry> read_mountinfo();

// The last (topmost) mount at `path`, if any.
std::optional<MountEntry> mount_at(const std::string& path);

bool mounted_at(const std::string& path);

}  // namespace eventfs_it
