// Tracefs over a directory: the live mount and fixture trees look the same.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "tracefs/file_io.h"
#include "tracefs/tracefs.h"

namespace eventfs {
namespace {

std::vector<std::string> list_dirs(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (!d) return out;
  while (dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    bool dir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st;
      dir = fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
    }
    if (dir) out.push_back(std::move(n));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool valid_component(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

class DirTracefs final : public Tracefs {
 public:
  explicit DirTracefs(std::string root) : root_(std::move(root)) {}

  const std::string& root() const override { return root_; }

  std::vector<std::string> systems() const override { return list_dirs(root_ + "/events"); }

  std::vector<std::string> events(const std::string& system) const override {
    if (!valid_component(system)) return {};
    return list_dirs(root_ + "/events/" + system);
  }

  Result<std::string> read_format(const std::string& system, const std::string& event) const override {
    if (!valid_component(system) || !valid_component(event))
      return fail(ENOENT, fmt::format("{}:{}: not an event name", system, event));
    return read_whole_file(root_ + "/events/" + system + "/" + event + "/format");
  }

  bool has_event_file(const std::string& system, const std::string& event,
                      const std::string& file) const override {
    if (!valid_component(system) || !valid_component(event) || !valid_component(file)) return false;
    struct stat st;
    return stat((root_ + "/events/" + system + "/" + event + "/" + file).c_str(), &st) == 0;
  }

 private:
  std::string root_;
};

}  // namespace

std::unique_ptr<Tracefs> open_tracefs_dir(const std::string& dir) {
  return std::make_unique<DirTracefs>(dir);
}

}  // namespace eventfs
