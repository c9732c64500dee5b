#include "fs/mount_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sstream>

#include "tracefs/file_io.h"

namespace eventfs {
namespace {

std::string unescape(const std::string& s) {  // mountinfo writes blanks as \040
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

bool MountWatch::mounted(const std::string& mountinfo, const std::string& mountpoint) {
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, tok, fstype;
    if (!(f >> id >> parent >> dev >> root >> mnt)) continue;
    while (f >> tok && tok != "-") {
    }
    if (f >> fstype && fstype == "fuse.eventfs" && unescape(mnt) == mountpoint) return true;
  }
  return false;
}

MountWatch::MountWatch(std::string mountpoint, std::function<void()> gone)
    : mountpoint_(std::move(mountpoint)), gone_(std::move(gone)) {
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
    std::string text;
    if (read_whole_file("/proc/self/mountinfo", text) == 0 && !mounted(text, mountpoint_)) {
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
