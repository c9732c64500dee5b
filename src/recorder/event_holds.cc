#include "recorder/event_holds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs::recorder {
namespace {

// The last line of <mount>/error_log, which says why eventfs refused a write.
std::string last_error_line(const std::string& mount) {
  auto text = read_whole_file(mount + "/error_log");
  if (!text) return "";
  std::string all = std::move(text).value();
  while (!all.empty() && all.back() == '\n') all.pop_back();
  auto nl = all.rfind('\n');
  return nl == std::string::npos ? all : all.substr(nl + 1);
}

}  // namespace

Status EventHolds::hold(const std::vector<std::string>& events) {
  for (const auto& e : events) {
    if (Status held = hold_one(e); !held) {
      release();
      return held;
    }
  }
  return {};
}

Status EventHolds::hold_one(const std::string& event) {
  const std::string path = mount_ + "/" + event + "/enable";
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot open {}: {}", path, std::strerror(e)));
  }
  constexpr std::string_view kHold = "hold";
  ssize_t n;
  do n = ::write(fd, kHold.data(), kHold.size());
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(kHold.size())) {
    int e = n < 0 ? errno : EIO;
    ::close(fd);
    std::string msg = fmt::format("cannot enable {}: {}", event, std::strerror(e));
    if (auto why = last_error_line(mount_); !why.empty()) msg += " (error_log: " + why + ")";
    return fail(e, msg);
  }
  fds_.push_back(fd);
  return {};
}

void EventHolds::release() {
  // A close that reports an error has still closed the file, and with it
  // the hold.
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

}  // namespace eventfs::recorder
