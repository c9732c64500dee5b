// Integration-test helpers: the paths the tests use, and files read the way cat reads them.
#include "support/files.h"

namespace eventfs_it {

std::string fixture(const std::string& name) { return std::string(kFixturesDir) + "/" + name; }

const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {"linux-2.6.36", "linux-6.18", "linux-32bit-alt"};
  return names;
}

int read_file(const std::string& path, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) return errno;
  return 0;
}

std::string slurp(const std::string& path) {
  std::string out;
  if (int e = read_file(path, out)) return "<read " + path + " failed: " + std::strerror(e) + ">";
  return out;
}

bool write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += static_cast<char>(c);
  }
  return out.size() > 200 ? out.substr(0, 200) + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& path, bool dirs_only) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    if (dirs_only) {
      struct stat st;
      if (::fstatat(::dirfd(d), de->d_name, &st, 0) != 0 || !S_ISDIR(st.st_mode)) continue;
    }
    out.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string head_lines(const std::string& text, std::size_t n) {
  auto lines = split_lines(text);
  if (lines.size() <= n) return text;
  lines.resize(n);
  return join(lines) + "\n... (" + std::to_string(split_lines(text).size() - n) + " more lines)";
}

std::vector<std::string> tracefs_events(const std::string& tracefs_root) {
  std::vector<std::string> out;
  const std::string events = tracefs_root + "/events";
  for (const auto& sys : list_dir(events, true))
    for (const auto& ev : list_dir(events + "/" + sys, true))
      if (exists(events + "/" + sys + "/" + ev + "/format")) out.push_back(sys + "/" + ev);
  return out;
}

}  // namespace eventfs_it
