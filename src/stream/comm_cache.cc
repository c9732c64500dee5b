#include "stream/comm_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace eventfs {
namespace {

// True when this process's pids are the kernel's: /proc/self/status lists
// one pid in NSpid (a process in a child pid namespace has one per level).
bool sees_kernel_pids() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* line = std::strstr(buf, "\nNSpid:");
  if (!line) return true;  // (kernels before 4.1 say nothing of namespaces)
  line += 7;
  int numbers = 0;
  for (const char* p = line; *p && *p != '\n'; ++p)
    if (*p >= '0' && *p <= '9' && (p == line || p[-1] == ' ' || p[-1] == '\t')) ++numbers;
  return numbers == 1;
}

// The name of a user task from /proc/<pid>/stat ("pid (comm) state ...
// flags ..."). A kernel thread's /proc name is not its comm (a workqueue
// worker's carries the work it runs: "kworker/1:2-rcu_gp"), so for one of
// those this says nothing and the table's name stands.
bool read_proc_comm(std::int32_t pid, std::string& name) {
  constexpr unsigned long kKernelThread = 0x00200000;  // PF_KTHREAD
  char path[40];
  fmt::format_to_n(path, sizeof path - 1, "/proc/{}/stat", pid).out[0] = 0;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (!open || !close || close < open) return false;
  // After ") ": state, ppid, pgrp, session, tty_nr, tpgid, then flags.
  const char* p = close + 1;
  for (int field = 0; field < 6 && p; ++field) p = std::strchr(p + 1, ' ');
  if (!p) return false;
  const unsigned long flags = std::strtoul(p + 1, nullptr, 10);
  if (flags & kKernelThread) return false;
  name.assign(open + 1, static_cast<std::size_t>(close - open - 1));
  return true;
}

}  // namespace

CommCache::LiveName CommCache::proc_comm() {
  if (!sees_kernel_pids()) return nullptr;
  return read_proc_comm;
}

CommCache::CommCache(std::function<std::string()> read_table, LiveName live)
    : read_table_(std::move(read_table)), live_name_(std::move(live)) {}

std::size_t CommCache::name_of(std::int32_t pid, char* out, Source* from) {
  Source ignored;
  Source& source = from ? *from : ignored;
  source = Source::kNone;
  if (pid <= 0) return 0;
  std::uint64_t batch = 0;
  // The name this cache last saw the task alive with, once it is gone, and
  // the batch it saw it in.
  std::array<char, 16> last{};
  std::uint8_t last_len = 0;
  std::uint64_t last_seen = 0;
  if (live_name_) {
    std::lock_guard lock(live_mu_);
    auto it = live_.find(pid);
    if (it == live_.end() || it->second.batch != batch_) {
      if (it == live_.end()) {
        if (live_.size() >= kMaxNames) live_.clear();
        it = live_.emplace(pid, Live{}).first;
      }
      Live& l = it->second;
      std::string name;
      l.alive = live_name_(pid, name) && !name.empty();
      if (l.alive) {  // (a task gone keeps the name it was last seen with)
        l.len = static_cast<std::uint8_t>(std::min<std::size_t>(name.size(), l.name.size()));
        std::memcpy(l.name.data(), name.data(), l.len);
        l.seen = batch_;
      }
      l.batch = batch_;
    }
    const Live& l = it->second;
    if (l.alive) {
      std::memcpy(out, l.name.data(), l.len);
      source = Source::kLive;
      return l.len;
    }
    batch = batch_;
    last = l.name;
    last_len = l.len;
    last_seen = l.seen;
  }
  {
    std::shared_lock lock(mu_);
    auto it = names_.find(pid);
    // The table's name, unless this cache saw the task alive after the
    // table was read (the table's copy is older than that name).
    if (it != names_.end() && !(last_len && last_seen > table_batch_)) {
      const std::size_t n = std::min<std::size_t>(it->second.size(), 16);
      std::memcpy(out, it->second.data(), n);
      source = Source::kTable;
      // (Without live names, every name is the table's: it is read again
      // only after a miss.)
      if (live_name_ && table_batch_ < batch) table_named_.store(true, std::memory_order_relaxed);
      return n;
    }
  }
  if (last_len) {
    std::memcpy(out, last.data(), last_len);
    source = Source::kLastSeen;
    return last_len;
  }
  missed_.store(true, std::memory_order_relaxed);
  return 0;
}

void CommCache::begin() {
  std::lock_guard lock(live_mu_);
  ++batch_;
}

std::chrono::nanoseconds CommCache::gap_locked() const {
  return std::clamp<std::chrono::nanoseconds>(last_cost_ * kRefreshCostShare, kMinRefresh, kMaxRefresh);
}

std::chrono::nanoseconds CommCache::refresh_gap() const {
  std::lock_guard one(refresh_mu_);
  return gap_locked();
}

bool CommCache::refresh() {
  if (!missed_.load(std::memory_order_relaxed) && !table_named_.load(std::memory_order_relaxed)) return false;
  std::lock_guard one(refresh_mu_);
  const auto now = Clock::now();
  if (now - last_ < gap_locked()) return false;
  missed_.store(false, std::memory_order_relaxed);
  table_named_.store(false, std::memory_order_relaxed);
  load(read_table_());
  last_ = Clock::now();
  last_cost_ = last_ - now;
  return true;
}

void CommCache::load(std::string_view text) {
  std::unordered_map<std::int32_t, std::string> fresh;
  std::size_t at = 0;
  while (at < text.size() && fresh.size() < kMaxNames) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 >= line.size()) continue;
    char* stop = nullptr;
    const std::string digits(line.substr(0, space));
    const long pid = std::strtol(digits.c_str(), &stop, 10);
    if (*stop || pid < 0 || pid > INT32_MAX) continue;
    fresh[static_cast<std::int32_t>(pid)] = std::string(line.substr(space + 1, 16));
  }
  std::uint64_t batch;
  {
    std::lock_guard live(live_mu_);
    batch = batch_;
  }
  std::unique_lock lock(mu_);
  names_.swap(fresh);
  table_batch_ = batch;
}

}  // namespace eventfs
