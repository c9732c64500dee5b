// The names of tasks for the text stream's "<comm>-<pid>" column, from the
// kernel's saved_cmdlines (the names the kernel saved for the tasks it
// recorded events of). A lookup never reads a file: a pid it does not know
// is remembered, and the next refresh() re-reads the table (at most every
// kMinRefresh), so a task's first lines may show "<...>", as tracefs's own
// do when its table has no name.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace eventfs {

class CommCache {
 public:
  static constexpr std::chrono::milliseconds kMinRefresh{100};
  static constexpr std::size_t kMaxNames = 65536;

  // `read_table` gives saved_cmdlines' text ("<pid> <comm>" lines; empty if
  // there is none).
  explicit CommCache(std::function<std::string()> read_table) : read_table_(std::move(read_table)) {}

  // Copies the name of `pid` into `out` (16 bytes) and returns its length;
  // 0 when it is not known.
  std::size_t name_of(std::int32_t pid, char* out) const;
  // Re-reads the table if a lookup missed since the last time.
  void refresh();

  // Replaces the table with one parsed from `text` (for tests).
  void load(std::string_view text);

 private:
  std::function<std::string()> read_table_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::int32_t, std::string> names_;  // guarded by mu_
  mutable std::atomic<bool> missed_{true};
  std::mutex refresh_mu_;
  std::chrono::steady_clock::time_point last_{};  // guarded by refresh_mu_
};

}  // namespace eventfs
