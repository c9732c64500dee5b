#pragma once

#include <chrono>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace eventfs {

// The daemon's own threads, as a capture needs them: the records a save
// takes must not name one of them. The list is read from /proc/self/task at
// most every `kRelist`; a thread started since (libfuse starts its workers
// as requests come) is found the first time a record names it, by asking
// /proc/self/task about that one id. Ids that are not the daemon's are
// remembered, so a hot event's few tasks cost one look each.
class OwnThreads {
 public:
  static constexpr auto kRelist = std::chrono::milliseconds(10);
  // Foreign ids remembered at most; the memory is forgotten when full.
  static constexpr std::size_t kMaxForeign = 4096;

  OwnThreads();
  // Lists the threads again.
  void list();
  // Lists them again when kRelist has passed since the last list.
  void relist(std::chrono::steady_clock::time_point now);
  // True for an id of one of the daemon's threads (looked up when new).
  bool is_own(std::int64_t tid);
  // The threads known now, sorted.
  const std::vector<int>& tids() const { return tids_; }
  // True once after the known threads changed (a relist or a lookup).
  bool take_changed();

 private:
  std::vector<int> tids_;
  std::unordered_set<int> foreign_;
  std::chrono::steady_clock::time_point listed_;
  bool changed_ = false;
};

// The threads of this process, sorted.
std::vector<int> own_thread_ids();

}  // namespace eventfs
