// Child processes and threads that block in read(2) on a stream.
#include "support/children.h"

namespace eventfs_it::stream {

Children::~Children() {
  // A reader the daemon never answers stays until the mount ends.
  KillAll(SIGKILL, 1s);
  for (auto& k : kids_) {
    if (k.out >= 0) ::close(k.out);
    if (k.err >= 0) ::close(k.err);
  }
}

std::string describe_status(std::optional<int> st) {
  if (!st) return "still running";
  if (WIFEXITED(*st)) return "exit " + std::to_string(WEXITSTATUS(*st));
  if (WIFSIGNALED(*st)) return std::string("killed by ") + strsignal(WTERMSIG(*st));
  return "status " + std::to_string(*st);
}

}  // namespace eventfs_it::stream
