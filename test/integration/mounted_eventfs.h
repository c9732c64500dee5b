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

namespace eventfs_it {

// Every temporary directory of these tests starts with this, so a later run
// can find and remove what a crashed run left behind.
inline constexpr const char* kTempPrefix = "/tmp/eventfs-it-";
inline constexpr const char* kBinary = EVENTFS_BINARY;
inline constexpr const char* kFixturesDir = EVENTFS_FIXTURES_DIR;
inline constexpr const char* kSourceDir = EVENTFS_SOURCE_DIR;
inline constexpr const char* kLiveTracefs = "/sys/kernel/tracing";

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline std::string fixture(const std::string& name) { return std::string(kFixturesDir) + "/" + name; }

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {"linux-2.6.36", "linux-6.18", "linux-32bit-alt"};
  return names;
}

// ---------------------------------------------------------------------------
// Files, the way cat reads them.

// Reads the whole file with open/read/close; 0 or the errno of the failing call.
inline int read_file(const std::string& path, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) return errno;
  return 0;
}

// The file's text, or a marker that makes any comparison fail loudly.
inline std::string slurp(const std::string& path) {
  std::string out;
  if (int e = read_file(path, out)) return "<read " + path + " failed: " + std::strerror(e) + ">";
  return out;
}

inline bool write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}

inline bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Names in a directory (no . and ..), sorted; directories only if asked.
inline std::vector<std::string> list_dir(const std::string& path, bool dirs_only = false) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    if (dirs_only) {
      struct stat st;
      if (::fstatat(::dirfd(d), de->d_name, &st, 0) != 0 || !S_ISDIR(st.st_mode)) continue;
    }
    out.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

inline std::string join(const std::vector<std::string>& v, const std::string& sep = "\n") {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// The first `n` lines of a text, for failure messages that stay readable.
inline std::string head_lines(const std::string& text, std::size_t n = 20) {
  auto lines = split_lines(text);
  if (lines.size() <= n) return text;
  lines.resize(n);
  return join(lines) + "\n... (" + std::to_string(split_lines(text).size() - n) + " more lines)";
}

// Every tracefs event that has a format file: "system/event", sorted.
inline std::vector<std::string> tracefs_events(const std::string& tracefs_root) {
  std::vector<std::string> out;
  const std::string events = tracefs_root + "/events";
  for (const auto& sys : list_dir(events, true))
    for (const auto& ev : list_dir(events + "/" + sys, true))
      if (exists(events + "/" + sys + "/" + ev + "/format")) out.push_back(sys + "/" + ev);
  return out;
}

// ---------------------------------------------------------------------------
// Mount table.

struct MountEntry {
  std::string mount_point;
  std::string fstype;
  std::string source;
  std::string options;
};

inline std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

inline std::vector<MountEntry> read_mountinfo() {
  std::vector<MountEntry> out;
  std::string text;
  if (read_file("/proc/self/mountinfo", text) != 0) return out;
  for (const auto& line : split_lines(text)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superopts
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, opts, tok;
    if (!(f >> id >> parent >> dev >> root >> mnt >> opts)) continue;
    while (f >> tok && tok != "-") {
    }
    MountEntry e;
    e.mount_point = unescape_mountinfo(mnt);
    f >> e.fstype >> e.source >> e.options;
    e.source = unescape_mountinfo(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

// The last (topmost) mount at `path`, if any.
inline std::optional<MountEntry> mount_at(const std::string& path) {
  std::optional<MountEntry> found;
  for (auto& e : read_mountinfo())
    if (e.mount_point == path) found = e;
  return found;
}

inline bool mounted_at(const std::string& path) { return mount_at(path).has_value(); }

// ---------------------------------------------------------------------------
// Processes.

inline bool wait_exit(pid_t pid, std::chrono::milliseconds timeout, int& status) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
}

// Alive and not a zombie (a non-child's zombie may linger if nobody reaps it).
inline bool process_alive(pid_t pid) {
  std::string stat;
  if (read_file("/proc/" + std::to_string(pid) + "/stat", stat) != 0) return false;
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

// Start time of a process in clock ticks since boot (field 22 of stat).
inline std::string process_start_time(pid_t pid) {
  std::string stat;
  if (read_file("/proc/" + std::to_string(pid) + "/stat", stat) != 0) return "";
  auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream f(stat.substr(close + 2));
  std::string tok;
  for (int field = 3; field <= 22 && (f >> tok); ++field) {
    if (field == 22) return tok;
  }
  return "";
}

// This process's owner line: "<pid> <start time>".
inline std::string owner_line() {
  return std::to_string(::getpid()) + " " + process_start_time(::getpid()) + "\n";
}

inline std::vector<std::string> process_argv(pid_t pid) {
  std::string raw;
  std::vector<std::string> out;
  if (read_file("/proc/" + std::to_string(pid) + "/cmdline", raw) != 0) return out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (raw[i] == '\0') {
      out.push_back(raw.substr(start, i - start));
      start = i + 1;
    }
  if (start < raw.size()) out.push_back(raw.substr(start));
  return out;
}

// Live eventfs processes (this build's binary) with an argument that contains `needle`.
inline std::vector<pid_t> eventfs_pids_mentioning(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* de = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(de->d_name, &end, 10);
    if (!end || *end || pid <= 0 || pid == ::getpid()) continue;
    auto argv = process_argv(static_cast<pid_t>(pid));
    if (argv.empty() || argv[0] != kBinary) continue;
    for (std::size_t i = 1; i < argv.size(); ++i)
      if (argv[i].find(needle) != std::string::npos && process_alive(static_cast<pid_t>(pid))) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
  }
  ::closedir(d);
  return out;
}

// An anonymous in-memory file for a child's output: never fills up and
// blocks the child as a pipe would, and leaves nothing on disk.
inline int make_capture_fd(const char* name) { return ::memfd_create(name, MFD_CLOEXEC); }

inline std::string read_capture(int fd) {
  std::string out;
  if (fd < 0) return out;
  char buf[8192];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  return out;
}

// fork + exec `argv` with stdin from /dev/null and stdout/stderr into the
// given fds (-1: /dev/null), in `cwd` if not empty. Returns the pid or -1.
inline pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
                   const std::string& cwd = "") {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(devnull, 0);
    ::dup2(out_fd >= 0 ? out_fd : devnull, 1);
    ::dup2(err_fd >= 0 ? err_fd : devnull, 2);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(devnull);
  return pid;
}

struct RunResult {
  bool timed_out = false;
  int status = -1;  // wait status
  std::string out, err;
  bool exited() const { return !timed_out && WIFEXITED(status); }
  int exit_code() const { return exited() ? WEXITSTATUS(status) : -1; }
  std::string describe() const {
    std::ostringstream s;
    if (timed_out)
      s << "timed out";
    else if (WIFEXITED(status))
      s << "exit " << WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      s << "killed by signal " << WTERMSIG(status);
    s << "; stdout: [" << out << "]; stderr: [" << err << "]";
    return s.str();
  }
};

// Runs a command to completion (killed after `timeout`).
inline RunResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = 10s,
                     const std::string& cwd = "") {
  RunResult r;
  int out = make_capture_fd("stdout"), err = make_capture_fd("stderr");
  pid_t pid = spawn(argv, out, err, cwd);
  if (pid < 0) {
    r.err = std::string("fork: ") + std::strerror(errno);
  } else if (!wait_exit(pid, timeout, r.status)) {
    r.timed_out = true;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &r.status, 0);
  }
  r.out = read_capture(out);
  r.err = read_capture(err);
  ::close(out);
  ::close(err);
  return r;
}

// Runs a shell pipeline through popen (bounded by coreutils' timeout inside
// the command); returns stdout and sets `exit_code`.
inline std::string shell(const std::string& command, int* exit_code = nullptr) {
  std::string out;
  if (command.find('\'') != std::string::npos) {  // it is quoted whole below
    if (exit_code) *exit_code = -1;
    return "<shell(): no single quotes in commands>";
  }
  std::string full = "LC_ALL=C timeout 20 sh -c '" + command + "'";
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) {
    if (exit_code) *exit_code = -1;
    return out;
  }
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  if (exit_code) *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

// Unmounts `path` lazily: fusermount3 first, umount2(MNT_DETACH) if that fails.
inline void force_unmount(const std::string& path) {
  if (!mounted_at(path)) return;
  run({"/usr/bin/fusermount3", "-u", "-z", path}, 5s);
  if (mounted_at(path)) ::umount2(path.c_str(), MNT_DETACH);
}

// ---------------------------------------------------------------------------
// Temporary directories.

inline int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (::rmdir(path) != 0) ::unlink(path);
  return 0;
}

// Removes a tree without crossing into mounts (FTW_MOUNT) or following links.
inline void remove_tree(const std::string& path) {
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_MOUNT | FTW_PHYS);
}

// A fresh /tmp/eventfs-it-XXXXXX with an `owner` file naming this process, so a
// later run can tell a crashed run's leftovers from a concurrent run's.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::string(kTempPrefix) + "XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) {
      path_ = buf.data();
      ::chmod(path_.c_str(), 0755);
      write_text_file(path_ + "/owner",
                      owner_line());
    }
  }
  ~TempDir() {
    if (path_.empty()) return;
    // Never delete through a mount that could not be taken down.
    for (const auto& e : read_mountinfo())
      if (e.mount_point.rfind(path_ + "/", 0) == 0) force_unmount(e.mount_point);
    remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Removes a test mount's tracefs instance once no daemon owns it (the kernel
// takes a plain rmdir even with triggers set), with its ownership record.
inline void remove_stale_instance(const std::string& inst, const std::string& name) {
  const std::string record = "/run/eventfs/" + name + ".owner";
  std::string owner;
  if (read_file(record, owner) == 0) {
    long pid = std::strtol(owner.c_str(), nullptr, 10);
    if (pid > 0 && process_alive(static_cast<pid_t>(pid))) return;
  }
  if (::rmdir(inst.c_str()) == 0 || errno == ENOENT) ::unlink(record.c_str());
}

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
inline const std::set<std::string>& control_root_entries() {
  static const std::set<std::string> s = {"error_log", "trace_pipe", "per_cpu"};
  return s;
}
inline const std::set<std::string>& control_event_entries() {
  static const std::set<std::string> s = {"enable", "filter", "trigger"};
  return s;
}

// `got` holds every name of `required`, and nothing else but names of `optional`.
inline ::testing::AssertionResult ListingMatches(const std::vector<std::string>& got,
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

// ---------------------------------------------------------------------------
// Preconditions.

inline std::string root_skip_reason() {
  if (::geteuid() != 0) return "needs root (FUSE mounts and tracefs)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
  if (::access(kBinary, X_OK) != 0) return std::string("daemon not built: ") + kBinary;
  return "";
}

inline std::string live_skip_reason() {
  std::string why = root_skip_reason();
  if (!why.empty()) return why;
  struct stat st;
  std::string ev = std::string(kLiveTracefs) + "/events/sched/sched_switch/format";
  if (::stat(ev.c_str(), &st) != 0) return "no live tracefs with sched:sched_switch at " + std::string(kLiveTracefs);
  return "";
}

#define EVENTFS_REQUIRE_ROOT()                                              \
  do {                                                                      \
    if (auto why_ = ::eventfs_it::root_skip_reason(); !why_.empty()) GTEST_SKIP() << why_; \
  } while (0)

#define EVENTFS_REQUIRE_LIVE_TRACEFS()                                      \
  do {                                                                      \
    if (auto why_ = ::eventfs_it::live_skip_reason(); !why_.empty()) GTEST_SKIP() << why_; \
  } while (0)

// ---------------------------------------------------------------------------
// Stale mounts of crashed runs, and a watchdog.

// The pid of an owner line (0 if none), and whether that process is gone
// (another process with its pid has another start time).
inline long owner_pid(const std::string& owner) {
  std::istringstream in(owner);
  long pid = 0;
  in >> pid;
  return pid > 0 ? pid : 0;
}
inline bool owner_gone(const std::string& owner) {
  std::istringstream in(owner);
  long pid = 0;
  std::string start;
  in >> pid >> start;
  if (pid <= 0) return true;
  if (pid == ::getpid()) return false;
  return !process_alive(static_cast<pid_t>(pid)) || process_start_time(static_cast<pid_t>(pid)) != start;
}

// Is the run that made `dir` gone? (its owner file names a process that no
// longer exists; a directory without one is stale once it is a minute old).
inline bool temp_dir_is_stale(const std::string& dir) {
  std::string owner;
  if (read_file(dir + "/owner", owner) != 0) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return false;
    return std::time(nullptr) - st.st_mtime > 60;
  }
  return owner_gone(owner);
}

// The /tmp/eventfs-it-XXXXXX part of a path under it, or "".
inline std::string temp_dir_of(const std::string& path) {
  std::string prefix = kTempPrefix;
  if (path.rfind(prefix, 0) != 0) return "";
  auto slash = path.find('/', prefix.size());
  return slash == std::string::npos ? path : path.substr(0, slash);
}

// Unmounts and removes what crashed runs left under /tmp/eventfs-it-*.
// Returns how many mounts it took down.
inline int clean_stale_mounts() {
  if (::geteuid() != 0) return 0;
  int taken_down = 0;
  std::set<std::string> stale;
  for (const auto& e : read_mountinfo()) {
    std::string dir = temp_dir_of(e.mount_point);
    if (dir.empty() || !temp_dir_is_stale(dir)) continue;
    force_unmount(e.mount_point);
    ++taken_down;
    stale.insert(dir);
  }
  glob_t g{};
  std::string pattern = std::string(kTempPrefix) + "*";
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (temp_dir_is_stale(g.gl_pathv[i])) stale.insert(g.gl_pathv[i]);
  }
  ::globfree(&g);
  for (const auto& dir : stale) {
    // Unmounted, a daemon ends on its own (and removes its tracefs instance);
    // only one that does not is killed.
    auto pids = eventfs_pids_mentioning(dir + "/");
    auto gone = [&](std::chrono::milliseconds limit) {
      auto deadline = Clock::now() + limit;
      for (;;) {
        bool any = false;
        for (pid_t pid : pids) any = any || process_alive(pid);
        if (!any) return true;
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(10ms);
      }
    };
    if (!gone(3s)) {
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
      gone(2s);
    }
    bool busy = false;
    for (const auto& e : read_mountinfo())
      if (e.mount_point.rfind(dir + "/", 0) == 0) busy = true;
    if (!busy) remove_tree(dir);
  }
  // tracefs instances that killed daemons of those runs left behind.
  pattern = std::string(kLiveTracefs) + "/instances/eventfs-it-*";
  g = {};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::string inst = g.gl_pathv[i];
      std::string name = inst.substr(inst.rfind('/') + 1);
      std::string dir = std::string(kTempPrefix) + name.substr(std::string("eventfs-it-").size());
      if (exists(dir) && !temp_dir_is_stale(dir)) continue;
      remove_stale_instance(inst, name);
    }
  }
  ::globfree(&g);
  return taken_down;
}

// ---------------------------------------------------------------------------
// CPUs a test takes offline (CpuOffline). /tmp/eventfs-offline-cpuN holds
// the owner line of the run that did: the test brings the CPU online again
// when it ends, the watchdog before it ends a hung run, and the next run
// (StaleMountCleaner) after a crash.

inline std::string cpu_online_file(int cpu) { return "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online"; }
inline std::string offline_record(int cpu) { return "/tmp/eventfs-offline-cpu" + std::to_string(cpu); }

// One write(2) of `text`: 0 or the errno.
inline int write_sysfs(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int e = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  ::close(fd);
  return e;
}

// CPU `cpu` online again (retried for 5 s: EBUSY while a hot-plug runs),
// and its record gone.
inline bool bring_cpu_online(int cpu) {
  for (int i = 0; i < 50; ++i) {
    if (write_sysfs(cpu_online_file(cpu), "1") == 0) {
      ::unlink(offline_record(cpu).c_str());
      return true;
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// Brings online every CPU recorded offline by this process (`mine`) or by a
// run that is gone; returns how many.
inline int restore_offline_cpus(bool mine) {
  int n = 0;
  glob_t g{};
  if (::glob("/tmp/eventfs-offline-cpu*", GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::string path = g.gl_pathv[i], owner;
      int cpu = std::atoi(path.c_str() + std::strlen("/tmp/eventfs-offline-cpu"));
      if (read_file(path, owner) != 0) continue;
      bool ours = owner_pid(owner) == ::getpid();
      if ((mine ? ours : !ours && owner_gone(owner)) && bring_cpu_online(cpu)) ++n;
    }
  }
  ::globfree(&g);
  return n;
}

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

// ---------------------------------------------------------------------------
// The format language.

// One line of a format in the eventfs language.
struct FormatLine {
  std::string kind;  // field, array, dynarray
  std::string name;
  std::string type;
  unsigned bits = 0;
  unsigned count = 0;  // arrays
  std::string loc;     // dynarrays
  unsigned align = 0;
  int is_signed = -1;
};

inline const std::regex& format_line_regex() {
  // The language of DESIGN.md, plus the documented dynarray extension.
  static const std::regex re(
      "^\\t(field:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)"
      "|array:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)\\tcount:(\\d+)"
      "|dynarray:(\\S+)\\ttype:([^\\t]+)\\tsize:(\\d+)\\tloc:(data_loc|rel_loc|tail))"
      "\\talign:(\\d+)\\tsigned:([01]);$");
  return re;
}

// Parses a whole format; lines that are not in the language go to `bad`.
inline std::vector<FormatLine> parse_format(const std::string& text, std::vector<std::string>* bad = nullptr) {
  std::vector<FormatLine> out;
  const std::regex& re = format_line_regex();
  for (const auto& line : split_lines(text)) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      if (bad) bad->push_back(line);
      continue;
    }
    FormatLine f;
    if (m[2].matched) {
      f.kind = "field";
      f.name = m[2];
      f.type = m[3];
      f.bits = std::stoul(m[4]);
    } else if (m[5].matched) {
      f.kind = "array";
      f.name = m[5];
      f.type = m[6];
      f.bits = std::stoul(m[7]);
      f.count = std::stoul(m[8]);
    } else {
      f.kind = "dynarray";
      f.name = m[9];
      f.type = m[10];
      f.bits = std::stoul(m[11]);
      f.loc = m[12];
    }
    f.align = std::stoul(m[13]);
    f.is_signed = m[14] == "1";
    out.push_back(std::move(f));
  }
  if (!text.empty() && text.back() != '\n' && bad) bad->push_back("<no newline at end>");
  return out;
}

// One field of a tracefs format file.
struct TracefsField {
  std::string decl;  // "char prev_comm[16]", "__data_loc char[] name"
  std::string name;
  unsigned offset = 0, size = 0;
  int is_signed = 0;
  bool common = false;
};

inline std::vector<TracefsField> parse_tracefs_format(const std::string& text) {
  std::vector<TracefsField> out;
  static const std::regex re("^\\tfield:(.*);\\toffset:(\\d+);\\tsize:(\\d+);\\tsigned:(\\d+);$");
  bool in_format = false, common = true;
  for (const auto& line : split_lines(text)) {
    if (line == "format:") {
      in_format = true;
      continue;
    }
    if (!in_format) continue;
    if (line.rfind("print fmt:", 0) == 0) break;
    if (line.empty()) {
      common = false;
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, re)) continue;
    TracefsField f;
    f.decl = m[1];
    f.offset = std::stoul(m[2]);
    f.size = std::stoul(m[3]);
    f.is_signed = std::stoi(m[4]);
    f.common = common;
    // The name is the last identifier, after any [..] suffixes are dropped.
    std::string d = f.decl;
    while (!d.empty() && (d.back() == ' ')) d.pop_back();
    while (!d.empty() && d.back() == ']') {
      auto open = d.rfind('[');
      if (open == std::string::npos) break;
      d = d.substr(0, open);
      while (!d.empty() && d.back() == ' ') d.pop_back();
    }
    std::size_t start = d.size();
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(d[start - 1])) || d[start - 1] == '_')) --start;
    f.name = d.substr(start);
    out.push_back(std::move(f));
  }
  return out;
}

// ---------------------------------------------------------------------------
// The default catalog, read independently of the daemon's parser.

struct CatalogEntry {
  std::string name;
  std::vector<std::string> sources;  // "system/event"
  unsigned id = 0;
};

inline std::vector<CatalogEntry> default_catalog() {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string stripped;
  for (const auto& line : split_lines(text)) {
    auto hash = line.find('#');
    stripped += (hash == std::string::npos ? line : line.substr(0, hash)) + "\n";
  }
  std::vector<CatalogEntry> out;
  static const std::regex re("STABLE_EVENT\\(\\s*(\\w+)\\s*,\\s*([\\w:|\\s]+?)\\s*,\\s*id\\s*=\\s*(\\w+)");
  for (auto it = std::sregex_iterator(stripped.begin(), stripped.end(), re); it != std::sregex_iterator(); ++it) {
    CatalogEntry e;
    e.name = (*it)[1];
    std::string srcs = (*it)[2];
    static const std::regex src_re("(\\w+):(\\w+)");
    for (auto s = std::sregex_iterator(srcs.begin(), srcs.end(), src_re); s != std::sregex_iterator(); ++s)
      e.sources.push_back((*s)[1].str() + "/" + (*s)[2].str());
    e.id = static_cast<unsigned>(std::stoul((*it)[3], nullptr, 0));
    out.push_back(std::move(e));
  }
  return out;
}

// The stable events a tracefs tree should offer: those whose raw event exists.
inline std::set<std::string> expected_available(const std::vector<CatalogEntry>& cat, const std::string& tracefs_root) {
  std::set<std::string> out;
  for (const auto& e : cat)
    for (const auto& src : e.sources)
      if (exists(tracefs_root + "/events/" + src + "/format")) {
        out.insert(e.name);
        break;
      }
  return out;
}

// ---------------------------------------------------------------------------
// The RFC's golden formats.

inline constexpr const char* kGoldenSchedSwitch =
    "\tarray:prev_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:prev_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:prev_state\ttype:char\tsize:8\talign:1\tsigned:1;\n"
    "\tarray:next_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:next_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n";

inline constexpr const char* kGoldenSchedMigrateTask =
    "\tarray:comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:orig_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:dest_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n";

}  // namespace eventfs_it
