// Helpers for the integration tests: run the real eventfs daemon on a fresh
// temporary mount point and take it down again whatever happens in the test.
// 
// Everything here uses plain syscalls (fork/exec, open/read/close, mount
// tables from /proc/self/mountinfo) so the tests see the mount the way a
// shell does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/formats.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// The daemon under test.

struct MountOptions {
  std::vector<std::string> args;  // extra arguments before the mount point (-o ..., SOURCE)
  // Over a real tracefs the daemon makes its own tracefs instance. Each test
  // mount gets one of its own (eventfs-it-XXXXXX) so tests never collide with
  // a daemon someone else runs with the default name; false keeps the default.
  bool own_instance = true;
  // With own_instance: this name instead of a fresh one (a second daemon on
  // the instance of an earlier one, say). Cleaned up the same way.
  std::string instance_name;
  bool foreground = true;         // pass -f
  bool relative_mountpoint = false;  // pass "mnt", relative to the temp dir (runs there)
  std::string cwd;                // where the daemon starts (default: the temp dir)
  std::chrono::milliseconds timeout = 5s;
};

class MountedEventfs {
 public:
  MountedEventfs() = default;
  explicit MountedEventfs(MountOptions o) : opts_(std::move(o)) {}
  explicit MountedEventfs(std::vector<std::string> args) { opts_.args = std::move(args); }
  // Stop()s the daemon and closes the stderr capture.
  ~MountedEventfs();
  MountedEventfs(const MountedEventfs&) = delete;
  MountedEventfs& operator=(const MountedEventfs&) = delete;

  // Runs the daemon and waits (bounded) until mountinfo shows the mount.
  ::testing::AssertionResult Start();

  const std::string& path() const { return mnt_; }
  std::string operator/(const std::string& rel) const { return mnt_ + "/" + rel; }
  const TempDir& dir() const { return dir_; }
  // The tracefs instance this mount was told to use ("" for the default).
  const std::string& instance() const { return instance_; }
  pid_t pid() const { return pid_; }
  bool is_child() const { return child_; }
  std::string Stderr() const { return read_capture(err_fd_); }
  int launcher_status() const { return launcher_status_; }
  bool mounted_on_return() const { return mounted_on_return_; }

  // Sends `sig` to the daemon and waits for it to exit. Returns its wait status
  // (children only), or nullopt when it did not exit in time.
  std::optional<int> SignalAndWait(int sig, std::chrono::milliseconds timeout = 5s);

  // Waits for the daemon to exit on its own (after an external unmount, say).
  std::optional<int> WaitExit(std::chrono::milliseconds timeout = 5s);

  // Unmounts, ends the daemon, reaps it. Safe to call twice.
  void Stop();

 private:
  MountOptions opts_;
  TempDir dir_;
  std::string mnt_;
  std::string instance_;
  int err_fd_ = -1;
  pid_t pid_ = -1;
  bool child_ = false;
  std::optional<int> exit_status_;
  int launcher_status_ = -1;
  bool mounted_on_return_ = false;
};

// ---------------------------------------------------------------------------
// What a listing may hold.

// Entries DESIGN.md documents beyond the read-only core. A mount over a real
// tracefs (which has an instance to write to) may have them; the tests here
// check only that nothing undocumented appears.
const std::set<std::string>& control_root_entries();
const std::set<std::string>& control_event_entries();

// `got` holds every name of `required`, and nothing else but names of `optional`.
::testing::AssertionResult ListingMatches(const std::vector<std::string>& got,
                                          const std::set<std::string>& required,
                                          const std::set<std::string>& optional);

// ---------------------------------------------------------------------------
// Preconditions.

std::string root_skip_reason();

std::string live_skip_reason();

#define EVENTFS_REQUIRE_ROOT()                                              \
  do {                                                                      \
    if (auto why_ = ::eventfs_it::root_skip_reason(); !why_.empty()) GTEST_SKIP() << why_; \
  } while (0)

#define EVENTFS_REQUIRE_LIVE_TRACEFS()                                      \
  do {                                                                      \
    if (auto why_ = ::eventfs_it::live_skip_reason(); !why_.empty()) GTEST_SKIP() << why_; \
  } while (0)

}  // namespace eventfs_it
