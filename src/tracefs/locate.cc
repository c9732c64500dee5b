#include "tracefs/locate.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace eventfs {
namespace {

// mountinfo escapes blanks and backslashes as \ooo.
std::string unescape(const std::string& s) {
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

std::string tracefs_in_mountinfo(const std::string& mountinfo) {
  std::istringstream in(mountinfo);
  std::string line, found;
  while (std::getline(in, line)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, tok;
    if (!(f >> id >> parent >> dev >> root >> mnt)) continue;
    while (f >> tok && tok != "-") {
    }
    std::string fstype;
    if (!(f >> fstype) || fstype != "tracefs") continue;
    std::string path = unescape(mnt);
    if (path == kDefaultTracefsMount) return path;
    if (found.empty()) found = path;
  }
  return found;
}

int locate_tracefs(std::string& path, std::string& message) {
  std::ifstream in("/proc/self/mountinfo");
  std::ostringstream ss;
  ss << in.rdbuf();
  path = tracefs_in_mountinfo(ss.str());
  if (!path.empty()) return 0;
  if (mount("nodev", kDefaultTracefsMount, "tracefs", 0, nullptr) != 0) {
    int e = errno;
    message = fmt::format("tracefs is not mounted, and mounting it at {} failed: {}",
                          kDefaultTracefsMount, std::strerror(e));
    return e;
  }
  path = kDefaultTracefsMount;
  return 0;
}

}  // namespace eventfs
