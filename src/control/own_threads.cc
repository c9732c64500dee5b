#include "control/own_threads.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace eventfs {

std::vector<int> own_thread_ids() {
  std::vector<int> tids;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    ::closedir(d);
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

OwnThreads::OwnThreads() : tids_(own_thread_ids()), listed_(std::chrono::steady_clock::now()) {}

void OwnThreads::relist(std::chrono::steady_clock::time_point now) {
  if (now >= listed_ + kRelist) list();
}

void OwnThreads::list() {
  listed_ = std::chrono::steady_clock::now();
  std::vector<int> fresh = own_thread_ids();
  if (fresh == tids_) return;
  tids_ = std::move(fresh);
  foreign_.clear();  // an id may have been reused by a thread of ours
  changed_ = true;
}

bool OwnThreads::is_own(std::int64_t tid) {
  if (tid <= 0 || tid > INT32_MAX) return false;
  const int id = static_cast<int>(tid);
  if (std::binary_search(tids_.begin(), tids_.end(), id)) return true;
  if (foreign_.count(id)) return false;
  // A thread of this process that the last list did not have?
  if (::access(("/proc/self/task/" + std::to_string(id)).c_str(), F_OK) == 0) {
    tids_.insert(std::upper_bound(tids_.begin(), tids_.end(), id), id);
    changed_ = true;
    return true;
  }
  if (foreign_.size() >= kMaxForeign) foreign_.clear();
  foreign_.insert(id);
  return false;
}

bool OwnThreads::take_changed() {
  const bool was = changed_;
  changed_ = false;
  return was;
}

}  // namespace eventfs
