#include "record/event_enabler.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs::record {
namespace {

bool read_small(const std::string& path, std::string& out) {
  if (int e = read_whole_file(path, out); e != 0) {
    errno = e;
    return false;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return true;
}

bool write_small(const std::string& path, const std::string& value) {
  int e = write_once(path, value, O_TRUNC);
  errno = e;
  return e == 0;
}

// The last line of <mount>/error_log, which says why eventfs refused a write.
std::string last_error_line(const std::string& mount) {
  std::string all;
  if (read_whole_file(mount + "/error_log", all) != 0) return "";
  while (!all.empty() && all.back() == '\n') all.pop_back();
  auto nl = all.rfind('\n');
  return nl == std::string::npos ? all : all.substr(nl + 1);
}

}  // namespace

void EventEnabler::enable(const std::vector<std::string>& events) {
  for (const auto& e : events) {
    const std::string path = mount_ + "/" + e + "/enable";
    std::string before;
    if (!read_small(path, before)) {
      std::string msg = fmt::format("cannot read {}: {}", path, std::strerror(errno));
      restore();
      throw std::runtime_error(msg);
    }
    // "1", or "1*"/"0*" when a trigger arms the event: only the digit is
    // the enable state, and only it can be written back.
    before = before.substr(0, 1);
    if (before == "1") continue;
    if (!write_small(path, "1")) {
      std::string msg = fmt::format("cannot enable {}: {}", e, std::strerror(errno));
      if (auto why = last_error_line(mount_); !why.empty()) msg += " (error_log: " + why + ")";
      restore();
      throw std::runtime_error(msg);
    }
    saved_.emplace_back(path, before);
  }
}

std::string EventEnabler::restore() {
  std::string first;
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
    if (!write_small(it->first, it->second) && first.empty())
      first = fmt::format("cannot restore {}: {}", it->first, std::strerror(errno));
  saved_.clear();
  return first;
}

}  // namespace eventfs::record
