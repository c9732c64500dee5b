#include "tracefs/mountinfo.h"

#include <cstdlib>
#include <sstream>

namespace eventfs {
namespace {

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

std::vector<MountInfoEntry> parse_mountinfo(const std::string& text) {
  std::vector<MountInfoEntry> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, tok, fstype;
    if (!(f >> id >> parent >> dev >> root >> mnt)) continue;
    while (f >> tok && tok != "-") {
    }
    char* end = nullptr;
    long mount_id = std::strtol(id.c_str(), &end, 10);
    if (*end) continue;
    long parent_id = std::strtol(parent.c_str(), &end, 10);
    if (*end) continue;
    if (f >> fstype) out.push_back({mount_id, parent_id, unescape(mnt), fstype});
  }
  return out;
}

}  // namespace eventfs
