// Helpers for the integration tests: run the real eventfs daemon on a fresh
// temporary mount point and take it down again whatever happens in the test.
// 
// Everything here uses plain syscalls (fork/exec, open/read/close, mount
// tables from /proc/self/mountinfo) so the tests see the mount the way a
// shell does.
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
  ~MountedEventfs() {
    Stop();
    if (err_fd_ >= 0) ::close(err_fd_);
  }
  MountedEventfs(const MountedEventfs&) = delete;
  MountedEventfs& operator=(const MountedEventfs&) = delete;

  // Runs the daemon and waits (bounded) until mountinfo shows the mount.
  ::testing::AssertionResult Start() {
    if (!dir_.ok()) return ::testing::AssertionFailure() << "mkdtemp: " << std::strerror(errno);
    mnt_ = dir_ / "mnt";
    if (::mkdir(mnt_.c_str(), 0755) != 0)
      return ::testing::AssertionFailure() << "mkdir " << mnt_ << ": " << std::strerror(errno);
    err_fd_ = make_capture_fd("eventfs-stderr");
    std::vector<std::string> argv = {kBinary};
    if (opts_.own_instance) {
      instance_ = !opts_.instance_name.empty()
                      ? opts_.instance_name
                      : "eventfs-it-" + dir_.path().substr(std::string(kTempPrefix).size());
      argv.insert(argv.end(), {"-o", "instance=" + instance_});
    }
    argv.insert(argv.end(), opts_.args.begin(), opts_.args.end());
    argv.push_back(opts_.relative_mountpoint ? "mnt" : mnt_);
    if (opts_.foreground) argv.push_back("-f");
    std::string cwd = opts_.relative_mountpoint || opts_.cwd.empty() ? dir_.path() : opts_.cwd;
    pid_t pid = spawn(argv, err_fd_, err_fd_, cwd);
    if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
    auto deadline = Clock::now() + opts_.timeout;
    if (opts_.foreground) {
      pid_ = pid;
      child_ = true;
    } else {
      // The command must return only once the mount is up.
      int st = 0;
      if (!wait_exit(pid, opts_.timeout, st)) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        return ::testing::AssertionFailure() << "eventfs (background) did not return within "
                                             << opts_.timeout.count() << " ms; stderr: " << Stderr();
      }
      launcher_status_ = st;
      mounted_on_return_ = mounted_at(mnt_);
      auto pids = eventfs_pids_mentioning(mnt_);
      if (pids.size() == 1) {
        pid_ = pids[0];
        // A child if this process is a subreaper, otherwise only watched via /proc.
        int dst = 0;
        pid_t r = ::waitpid(pid_, &dst, WNOHANG);
        child_ = r >= 0;
        if (r == pid_) {
          exit_status_ = dst;
          pid_ = -1;
        }
      }
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return ::testing::AssertionFailure() << "eventfs (background) failed with status " << st
                                             << "; stderr: " << Stderr();
    }
    for (;;) {
      if (auto e = mount_at(mnt_); e && e->fstype == "fuse.eventfs") return ::testing::AssertionSuccess();
      if (child_ && pid_ > 0) {
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
          exit_status_ = st;
          pid_ = -1;
          return ::testing::AssertionFailure() << "eventfs exited (status " << st
                                               << ") before mounting; stderr: " << Stderr();
        }
      }
      if (Clock::now() >= deadline)
        return ::testing::AssertionFailure() << "no fuse.eventfs mount at " << mnt_ << " within "
                                             << opts_.timeout.count() << " ms; stderr: " << Stderr();
      std::this_thread::sleep_for(5ms);
    }
  }

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
  std::optional<int> SignalAndWait(int sig, std::chrono::milliseconds timeout = 5s) {
    if (pid_ <= 0) return std::nullopt;
    ::kill(pid_, sig);
    return WaitExit(timeout);
  }

  // Waits for the daemon to exit on its own (after an external unmount, say).
  std::optional<int> WaitExit(std::chrono::milliseconds timeout = 5s) {
    if (pid_ <= 0) return exit_status_;
    int st = 0;
    if (child_) {
      if (!wait_exit(pid_, timeout, st)) return std::nullopt;
    } else {
      auto deadline = Clock::now() + timeout;
      while (process_alive(pid_)) {
        if (Clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(5ms);
      }
      st = 0;  // not ours to reap: only "gone" is known
    }
    pid_ = -1;
    exit_status_ = st;
    return st;
  }

  // Unmounts, ends the daemon, reaps it. Safe to call twice.
  void Stop() {
    if (!mnt_.empty()) force_unmount(mnt_);
    if (pid_ > 0) {
      // After the unmount the daemon ends on its own; help it if it does not.
      if (!WaitExit(3s) && pid_ > 0) {
        ::kill(pid_, SIGTERM);
        if (!WaitExit(2s) && pid_ > 0) {
          ::kill(pid_, SIGKILL);
          WaitExit(5s);
        }
      }
    }
    if (!mnt_.empty() && !mounted_at(mnt_)) ::rmdir(mnt_.c_str());
    // A daemon that had to be killed could not remove its tracefs instance.
    if (!instance_.empty() && pid_ <= 0) {
      std::string inst = std::string(kLiveTracefs) + "/instances/" + instance_;
      if (exists(inst)) remove_stale_instance(inst, instance_);
    }
  }

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
