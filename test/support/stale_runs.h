// What crashed runs left behind (mounts, offline CPUs), and a per-test watchdog.
#pragma once

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

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
  // Records the offlining (owner line in offline_record()), then writes 0 to
  // the CPU's online file; ok() tells whether both worked.
  explicit CpuOffline(int cpu);
  ~CpuOffline() { Restore(); }
  CpuOffline(const CpuOffline&) = delete;
  CpuOffline& operator=(const CpuOffline&) = delete;
  bool ok() const { return error_ == 0; }
  std::string error() const { return cpu_online_file(cpu_) + ": " + std::strerror(error_); }
  // Brings the CPU online again (once); true if it is, or was never taken offline.
  bool Restore();

 private:
  int cpu_;
  int error_ = 0;
  bool restored_ = false;
};

// Cleans up after crashed runs before the first test.
class StaleMountCleaner : public ::testing::Environment {
 public:
  // Waits while another run of the integration tests is under way (a lock
  // on /tmp/eventfs-it.lock, held until this one ends), then restores CPUs
  // that crashed runs left offline (as root) and takes down their mounts.
  void SetUp() override;
};

// Ends the run if one test hangs (a stuck FUSE request would otherwise block
// until the harness's own timeout); the next run cleans up its mounts.
class Watchdog : public ::testing::EmptyTestEventListener {
 public:
  static constexpr auto kPerTestLimit = 60s;

  // Starts the watching thread.
  void OnTestProgramStart(const ::testing::UnitTest&) override;
  // Stops the watching thread and joins it.
  void OnTestProgramEnd(const ::testing::UnitTest&) override;
  // Notes the test that runs now, and when it started.
  void OnTestStart(const ::testing::TestInfo& info) override;
  // No test runs now.
  void OnTestEnd(const ::testing::TestInfo&) override;

 private:
  // Every 100 ms: a test running longer than kPerTestLimit ends the run
  // (exit code 3), after bringing this run's offline CPUs back.
  void Watch();

  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string current_;
  Clock::time_point started_;
};

}  // namespace eventfs_it
