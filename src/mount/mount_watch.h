// The daemon's own mount, known by its mount id rather than its path: one path
// can hold several mounts stacked on each other (two eventfs daemons mounted
// on the same directory), and only the top one is reached through the path.
//
// MountWatch notices when the own mount goes away under the daemon (a lazy
// `umount -l` or `fusermount3 -u -z` while readers still wait in the kernel):
// FUSE then sends nothing until the last file is closed, so the daemon must
// see it in /proc/self/mountinfo, answer its waiting readers and exit.
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace eventfs {

struct OwnMount {
  long id = 0;
  std::string path;

  // The top fuse.eventfs mount at `path` in the mountinfo text (the one just
  // made, when called right after mounting); false if there is none.
  static bool find(const std::string& mountinfo, const std::string& path, OwnMount& out);
  // Whether the mount is still in the table.
  bool present(const std::string& mountinfo) const;
  // Whether another mount sits on it, so that `path` reaches that one.
  bool covered(const std::string& mountinfo) const;
};

// Reads /proc/self/mountinfo; empty text if it cannot.
std::string read_mountinfo();

class MountWatch {
 public:
  // Calls `gone` once, from its own thread, when `mount` is no longer in the
  // mount table. Start it once the mount is up.
  MountWatch(OwnMount mount, std::function<void()> gone);
  ~MountWatch();  // stops watching
  MountWatch(const MountWatch&) = delete;
  MountWatch& operator=(const MountWatch&) = delete;

 private:
  void run();
  OwnMount mount_;
  std::function<void()> gone_;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace eventfs
