// Temporary directories of the tests, owned by this run.
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

#include "support/processes.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// Temporary directories.

int remove_entry(const char* path, const struct stat*, int, struct FTW*);

// Removes a tree without crossing into mounts (FTW_MOUNT) or following links.
void remove_tree(const std::string& path);

// A fresh /tmp/eventfs-it-XXXXXX with an `owner` file naming this process, so a
// later run can tell a crashed run's leftovers from a concurrent run's.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::string(kTempPrefix) + "XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) {
      path_ = buf.data();
      ::chmod(path_.c_str(), 0755);
      write_text_file(path_ + "/owner",
                      owner_line());
    }
  }
  ~TempDir() {
    if (path_.empty()) return;
    // Never delete through a mount that could not be taken down.
    for (const auto& e : read_mountinfo())
      if (e.mount_point.rfind(path_ + "/", 0) == 0) force_unmount(e.mount_point);
    remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Removes a test mount's tracefs instance once no daemon owns it (the kernel
// takes a plain rmdir even with triggers set), with its ownership record.
void remove_stale_instance(const std::string& inst, const std::string& name);

}  // namespace eventfs_it
