// Temporary directories of the tests, owned by this run.
#include "support/temp_dirs.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

namespace eventfs_it {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (::rmdir(path) != 0) ::unlink(path);
  return 0;
}

void remove_tree(const std::string& path) {
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_MOUNT | FTW_PHYS);
}

void remove_stale_instance(const std::string& inst, const std::string& name) {
  const std::string record = "/run/eventfs/" + name + ".owner";
  std::string owner;
  if (read_file(record, owner) == 0) {
    long pid = std::strtol(owner.c_str(), nullptr, 10);
    if (pid > 0 && process_alive(static_cast<pid_t>(pid))) return;
  }
  if (::rmdir(inst.c_str()) == 0 || errno == ENOENT) ::unlink(record.c_str());
}

TempDir::TempDir() {
  std::string tmpl = std::string(kTempPrefix) + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data())) {
    path_ = buf.data();
    ::chmod(path_.c_str(), 0755);
    write_text_file(path_ + "/owner",
                    owner_line());
  }
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  // Never delete through a mount that could not be taken down.
  for (const auto& e : read_mountinfo())
    if (e.mount_point.rfind(path_ + "/", 0) == 0) force_unmount(e.mount_point);
  remove_tree(path_);
}

}  // namespace eventfs_it
