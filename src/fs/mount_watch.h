// Notices when the mount goes away under the daemon (a lazy `umount -l` or
// `fusermount3 -u -z` while readers still wait in the kernel): FUSE then
// sends nothing until the last file is closed, so the daemon must see it in
// /proc/self/mountinfo, answer its waiting readers and exit.
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace eventfs {

class MountWatch {
 public:
  // Calls `gone` once, from its own thread, when `mountpoint` no longer has
  // a fuse.eventfs mount. Start it once the mount is up.
  MountWatch(std::string mountpoint, std::function<void()> gone);
  ~MountWatch();  // stops watching
  MountWatch(const MountWatch&) = delete;
  MountWatch& operator=(const MountWatch&) = delete;

  // Whether mountinfo text shows a fuse.eventfs mount at `mountpoint`.
  static bool mounted(const std::string& mountinfo, const std::string& mountpoint);

 private:
  void run();
  std::string mountpoint_;
  std::function<void()> gone_;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace eventfs
