// The test's own /proc/self/mountinfo reader (independent of the daemon's parser).
#include "support/mount_table.h"

namespace eventfs_it {

std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<MountEntry> read_mountinfo() {
  std::vector<MountEntry> out;
  std::string text;
  if (read_file("/proc/self/mountinfo", text) != 0) return out;
  for (const auto& line : split_lines(text)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, opts, tok;
    if (!(f >> id >> parent >> dev >> root >> mnt >> opts)) continue;
    while (f >> tok && tok != "-") {
    }
    MountEntry e;
    e.mount_point = unescape_mountinfo(mnt);
    f >> e.fstype >> e.source >> e.options;
    e.source = unescape_mountinfo(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<MountEntry> mount_at(const std::string& path) {
  std::optional<MountEntry> found;
  for (auto& e : read_mountinfo())
    if (e.mount_point == path) found = e;
  return found;
}

bool mounted_at(const std::string& path) { return mount_at(path).has_value(); }

}  // namespace eventfs_it
