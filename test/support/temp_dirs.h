// Temporary directories of the tests, owned by this run.
#pragma once

#include <ftw.h>
#include <sys/stat.h>

#include <string>

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
  // Makes the directory and its owner file (ok() tells whether it exists).
  TempDir();
  // Unmounts whatever is still mounted under it, then removes the tree.
  ~TempDir();
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
