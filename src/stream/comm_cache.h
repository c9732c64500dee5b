// The names of tasks for the text stream's "<comm>-<pid>" column. tracefs
// prints the name its saved_cmdlines has when the line is read (the name
// the task had at its latest context switch, so never older than the
// record); eventfs gives a live user task's name from /proc/<pid>/stat
// (the same name, once the task has run), looked up once per batch of
// lines (begin()): the records of a batch were all written before it began,
// so a name looked up during it is never older than any of them, where a
// name kept from an earlier batch could be (a thread that renamed itself
// in between). A kernel thread or a task that is gone has the name of
// saved_cmdlines, or, if the table lacks it (the kernel saves names lazily,
// and older kernels keep 128 by default) or was read before this cache last
// saw the task alive, the name it had then. The table is read again after
// a lookup missed, or gave a gone task's name from a copy of the table read
// before the batch (the kernel may have saved a newer name since: a thread
// that renamed itself, kept in the copy under its parent's name); TextMerge
// then mends the lines it rendered meanwhile. The table is long on new
// kernels (6.18 keeps 6552 names, 128 KiB: over a millisecond to read; 5.10
// and 6.1 keep 128 by default), so it is read again no sooner than 20 times
// what its last read took (under 5% of a CPU), and kMinRefresh to
// kMaxRefresh apart. A name neither has stays "<...>", as tracefs's own
// lines do.
#pragma once

#include <array>
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
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kMinRefresh{1};
  static constexpr std::chrono::milliseconds kMaxRefresh{100};
  static constexpr int kRefreshCostShare = 20;  // reads of the table at least this many times their cost apart
  static constexpr std::size_t kMaxNames = 65536;
  // Gives a live task's name (false when there is no such task, or names
  // cannot be known this way).
  using LiveName = std::function<bool(std::int32_t pid, std::string& name)>;

  // `read_table` gives saved_cmdlines' text ("<pid> <comm>" lines; empty if
  // there is none); `live` defaults to /proc/<pid>/stat's name of a user
  // task, used only when this process sees the kernel's pids (the initial
  // pid namespace).
  explicit CommCache(std::function<std::string()> read_table, LiveName live = proc_comm());

  // Where a name came from.
  enum class Source { kNone, kLive, kTable, kLastSeen };
  // Copies the name of `pid` into `out` (16 bytes) and returns its length;
  // 0 when it is not known (and never for pid 0, the idle task). `from`, if
  // given, says where the name came from: a name from the table (kTable)
  // may change at the next refresh().
  std::size_t name_of(std::int32_t pid, char* out, Source* from = nullptr);
  // Before a batch of lookups: live names looked up before it are looked up
  // again (once) in it.
  void begin();
  // Re-reads the table if a lookup missed, or named a gone task from a copy
  // read before its batch, since it was last read (not sooner than the
  // last read's cost allows, above). True when it did.
  bool refresh();
  // The least time between two reads of the table now.
  std::chrono::nanoseconds refresh_gap() const;

  // Replaces the table with one parsed from `text` (for tests).
  void load(std::string_view text);
  // /proc/<pid>/stat where this process sees the kernel's pids, else none.
  static LiveName proc_comm();

 private:
  struct Live {
    std::array<char, 16> name{};
    std::uint8_t len = 0;
    bool alive = false;
    std::uint64_t batch = 0;  // the batch it was last looked up in
    std::uint64_t seen = 0;   // the batch it was last seen alive in (name, len: its name then)
  };
  std::function<std::string()> read_table_;
  LiveName live_name_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::int32_t, std::string> names_;  // guarded by mu_
  std::uint64_t table_batch_ = 0;                        // the batch names_ was read in; guarded by mu_
  std::chrono::nanoseconds gap_locked() const;  // refresh_gap(), refresh_mu_ held
  std::atomic<bool> missed_{true};
  std::atomic<bool> table_named_{false};  // a gone task named from a copy older than its batch
  mutable std::mutex refresh_mu_;
  Clock::time_point last_{};     // guarded by refresh_mu_
  Clock::duration last_cost_{};  // what the last read took; guarded by refresh_mu_
  std::mutex live_mu_;
  std::unordered_map<std::int32_t, Live> live_;  // guarded by live_mu_
  std::uint64_t batch_ = 1;                      // guarded by live_mu_
};

}  // namespace eventfs
