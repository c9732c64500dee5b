// Processes: spawn, run, wait, and what /proc says about them.
#include "support/processes.h"
#include "support/time_scale.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace eventfs_it {

bool wait_exit(pid_t pid, std::chrono::milliseconds timeout, int& status) {
  auto deadline = Clock::now() + scaled(timeout);
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
}

std::string thread_states(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::string out;
  for (const auto& tid : list_dir(task)) {
    std::string stat, wchan;
    if (read_file(task + "/" + tid + "/stat", stat) != 0) continue;
    read_file(task + "/" + tid + "/wchan", wchan);
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) continue;
    out += (out.empty() ? "" : ", ") + stat.substr(open + 1, close - open - 1) + " " + stat[close + 2] + " " +
           (wchan.empty() ? "-" : wchan);
  }
  return out;
}

bool process_alive(pid_t pid) {
  std::string stat;
  if (read_file("/proc/" + std::to_string(pid) + "/stat", stat) != 0) return false;
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

std::string process_start_time(pid_t pid) {
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

std::string owner_line() {
  return std::to_string(::getpid()) + " " + process_start_time(::getpid()) + "\n";
}

std::vector<std::string> process_argv(pid_t pid) {
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

std::vector<pid_t> eventfs_pids_mentioning(const std::string& needle) {
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

int make_capture_fd(const char* name) { return ::memfd_create(name, MFD_CLOEXEC); }

std::string read_capture(int fd) {
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

pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
            const std::string& cwd) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    // The child starts with the signal state a shell gives a command,
    // whatever the test runner's: a signal ignored here (SIGHUP under nohup,
    // SIGINT in a background job) would stay ignored across exec.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
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

RunResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
              const std::string& cwd) {
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

std::string shell(const std::string& command, int* exit_code) {
  std::string out;
  if (command.find('\'') != std::string::npos) {  // it is quoted whole below
    if (exit_code) *exit_code = -1;
    return "<shell(): no single quotes in commands>";
  }
  std::string full = "LC_ALL=C timeout " + std::to_string(scaled(20s).count() / 1000) + " sh -c '" + command + "'";
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

void force_unmount(const std::string& path) {
  if (!mounted_at(path)) return;
  run({"/usr/bin/fusermount3", "-u", "-z", path}, 5s);
  if (mounted_at(path)) ::umount2(path.c_str(), MNT_DETACH);
}

std::string RunResult::describe() const {
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

}  // namespace eventfs_it
