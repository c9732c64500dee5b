#include "mount/mount_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>


#include "tracefs/file_io.h"
#include "tracefs/mountinfo.h"

namespace eventfs {

bool OwnMount::find(const std::string& mountinfo, const std::string& path, OwnMount& out) {
  auto entries = parse_mountinfo(mountinfo);
  for (const auto& m : entries) {
    if (m.fstype != "fuse.eventfs" || m.mount_point != path) continue;
    OwnMount candidate{m.id, path};
    if (!candidate.covered(mountinfo)) {
      out = candidate;
      return true;
    }
  }
  return false;
}

bool OwnMount::present(const std::string& mountinfo) const {
  for (const auto& m : parse_mountinfo(mountinfo))
    if (m.id == id) return true;
  return false;
}

bool OwnMount::covered(const std::string& mountinfo) const {
  // A mount made on a directory that is a mount's root becomes that mount's child.
  for (const auto& m : parse_mountinfo(mountinfo))
    if (m.parent == id && m.mount_point == path) return true;
  return false;
}

std::string read_mountinfo() {
  auto text = read_whole_file("/proc/self/mountinfo");
  return text ? std::move(text).value() : std::string();
}

MountWatch::MountWatch(OwnMount mount, std::function<void()> gone)
    : mount_(std::move(mount)), gone_(std::move(gone)) {
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { run(); });
}

MountWatch::~MountWatch() {
  std::uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  close(stop_fd_);
}

void MountWatch::run() {
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    // mountinfo polls POLLPRI|POLLERR whenever the mount table changes.
    pollfd fds[2] = {{fd, POLLPRI, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) break;
    std::string text = read_mountinfo();
    if (!text.empty() && !mount_.present(text)) {
      gone_();
      break;
    }
    // Re-arm: the change is consumed by reading the file again through fd.
    lseek(fd, 0, SEEK_SET);
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
  }
  close(fd);
}

}  // namespace eventfs
