// Helpers for the integration tests: run the real eventfs daemon on a fresh
#include "support/mounted_eventfs.h"
#include "support/time_scale.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace eventfs_it {

const std::set<std::string>& control_root_entries() {
  static const std::set<std::string> s = {"error_log", "trace_clock", "variables", "trace_pipe", "per_cpu"};
  return s;
}

const std::set<std::string>& control_event_entries() {
  static const std::set<std::string> s = {"enable", "filter", "trigger"};
  return s;
}

::testing::AssertionResult ListingMatches(const std::vector<std::string>& got,
                                          const std::set<std::string>& required,
                                          const std::set<std::string>& optional) {
  std::set<std::string> have(got.begin(), got.end());
  std::vector<std::string> missing, unexpected;
  for (const auto& r : required)
    if (!have.count(r)) missing.push_back(r);
  for (const auto& h : have)
    if (!required.count(h) && !optional.count(h)) unexpected.push_back(h);
  if (missing.empty() && unexpected.empty() && have.size() == got.size()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "listing {" << join(got, ", ") << "}: missing {" << join(missing, ", ")
                                       << "}, unexpected {" << join(unexpected, ", ") << "}";
}

std::string root_skip_reason() {
  if (::geteuid() != 0) return "needs root (FUSE mounts and tracefs)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
  if (::access(kBinary, X_OK) != 0) return std::string("daemon not built: ") + kBinary;
  return "";
}

std::string live_skip_reason() {
  std::string why = root_skip_reason();
  if (!why.empty()) return why;
  struct stat st;
  std::string ev = std::string(kLiveTracefs) + "/events/sched/sched_switch/format";
  if (::stat(ev.c_str(), &st) != 0) return "no live tracefs with sched:sched_switch at " + std::string(kLiveTracefs);
  return "";
}

MountedEventfs::~MountedEventfs() {
  Stop();
  if (err_fd_ >= 0) ::close(err_fd_);
}

::testing::AssertionResult MountedEventfs::Start() {
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
  auto deadline = Clock::now() + scaled(opts_.timeout);
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
                                           << scaled(opts_.timeout).count() << " ms; stderr: " << Stderr();
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
                                           << scaled(opts_.timeout).count() << " ms; stderr: " << Stderr();
    std::this_thread::sleep_for(5ms);
  }
}

std::optional<int> MountedEventfs::SignalAndWait(int sig, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  ::kill(pid_, sig);
  return WaitExit(timeout);
}

std::optional<int> MountedEventfs::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return exit_status_;
  int st = 0;
  if (child_) {
    if (!wait_exit(pid_, timeout, st)) return std::nullopt;
  } else {
    auto deadline = Clock::now() + scaled(timeout);
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

void MountedEventfs::Stop() {
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

}  // namespace eventfs_it
