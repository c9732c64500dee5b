// What crashed runs left behind (mounts, offline CPUs), and a per-test watchdog.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dirs.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// Stale mounts of crashed runs, and a watchdog.

// The pid of an owner line (0 if none), and whether that process is gone
// (another process with its pid has another start time).
long owner_pid(const std::string& owner);
bool owner_gone(const std::string& owner);

// Is the run that made `dir` gone? (its owner file names a process that no
// longer exists; a directory without one is stale once it is a minute old).
bool temp_dir_is_stale(const std::string& dir);

// The /tmp/eventfs-it-XXXXXX part of a path under it, or "".
std::string temp_dir_of(const std::string& path);

// Unmounts and removes what crashed runs left under /tmp/eventfs-it-*.
// Returns how many mounts it took down.
int clean_stale_mounts();

// ---------------------------------------------------------------------------
// CPUs a test takes offline (CpuOffline). /tmp/eventfs-offline-cpuN holds
// the owner line of the run that did: the test brings the CPU online again
// when it ends, the watchdog before it ends a hung run, and the next run
// (StaleMountCleaner) after a crash.

std::string cpu_online_file(int cpu);
std::string offline_record(int cpu);

// One write(2) of `text`: 0 or the errno.
int write_sysfs(const std::string& path, const std::string& text);

// CPU `cpu` online again (retried for 5 s: EBUSY while a hot-plug runs),
// and its record gone.
bool bring_cpu_online(int cpu);

// Brings online every CPU recorded offline by this process (`mine`) or by a
// run that is gone; returns how many.
int restore_offline_cpus(bool mine);

// CPU `cpu` taken offline, and online again at Restore() or at the end,
// however the test ends.
class CpuOffline {
 public:
  explicit CpuOffline(int cpu) : cpu_(cpu) {
    if (!write_text_file(offline_record(cpu), owner_line())) {
      error_ = errno ? errno : EIO;
      return;
    }
    error_ = write_sysfs(cpu_online_file(cpu), "0");
    if (error_ != 0) ::unlink(offline_record(cpu).c_str());
  }
  ~CpuOffline() { Restore(); }
  CpuOffline(const CpuOffline&) = delete;
  CpuOffline& operator=(const CpuOffline&) = delete;
  bool ok() const { return error_ == 0; }
  std::string error() const { return cpu_online_file(cpu_) + ": " + std::strerror(error_); }
  bool Restore() {
    if (error_ == 0 && !restored_) restored_ = bring_cpu_online(cpu_);
    return error_ != 0 || restored_;
  }

 private:
  int cpu_;
  int error_ = 0;
  bool restored_ = false;
};

// Cleans up after crashed runs before the first test.
class StaleMountCleaner : public ::testing::Environment {
 public:
  void SetUp() override {
    if (int n = ::geteuid() == 0 ? restore_offline_cpus(false) : 0)
      std::fprintf(stderr, "[eventfs-it] brought %d CPU(s) online that a crashed run had taken offline\n", n);
    int n = clean_stale_mounts();
    if (n) std::fprintf(stderr, "[eventfs-it] took down %d stale mount(s) of earlier runs\n", n);
  }
};

// Ends the run if one test hangs (a stuck FUSE request would otherwise block
// until the harness's own timeout); the next run cleans up its mounts.
class Watchdog : public ::testing::EmptyTestEventListener {
 public:
  static constexpr auto kPerTestLimit = 60s;

  void OnTestProgramStart(const ::testing::UnitTest&) override {
    thread_ = std::thread([this] { Watch(); });
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void OnTestStart(const ::testing::TestInfo& info) override {
    std::lock_guard lock(mu_);
    current_ = std::string(info.test_suite_name()) + "." + info.name();
    started_ = Clock::now();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard lock(mu_);
    current_.clear();
  }

 private:
  void Watch() {
    while (!stop_) {
      std::this_thread::sleep_for(100ms);
      std::lock_guard lock(mu_);
      if (!current_.empty() && Clock::now() - started_ > kPerTestLimit) {
        std::fprintf(stderr, "[eventfs-it] %s took longer than %lld s: aborting the run\n",
                     current_.c_str(), static_cast<long long>(kPerTestLimit.count()));
        std::fflush(stderr);
        restore_offline_cpus(true);  // (no destructor runs after _Exit)
        std::_Exit(3);
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string current_;
  Clock::time_point started_;
};

}  // namespace eventfs_it
