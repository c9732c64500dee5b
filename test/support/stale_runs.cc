// What crashed runs left behind (mounts, offline CPUs), and a per-test watchdog.
#include "support/stale_runs.h"
#include "support/time_scale.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace eventfs_it {

long owner_pid(const std::string& owner) {
  std::istringstream in(owner);
  long pid = 0;
  in >> pid;
  return pid > 0 ? pid : 0;
}

bool owner_gone(const std::string& owner) {
  std::istringstream in(owner);
  long pid = 0;
  std::string start;
  in >> pid >> start;
  if (pid <= 0) return true;
  if (pid == ::getpid()) return false;
  return !process_alive(static_cast<pid_t>(pid)) || process_start_time(static_cast<pid_t>(pid)) != start;
}

bool temp_dir_is_stale(const std::string& dir) {
  std::string owner;
  if (read_file(dir + "/owner", owner) != 0) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return false;
    return std::time(nullptr) - st.st_mtime > 60;
  }
  return owner_gone(owner);
}

std::string temp_dir_of(const std::string& path) {
  std::string prefix = kTempPrefix;
  if (path.rfind(prefix, 0) != 0) return "";
  auto slash = path.find('/', prefix.size());
  return slash == std::string::npos ? path : path.substr(0, slash);
}

int clean_stale_mounts() {
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
      auto deadline = Clock::now() + scaled(limit);
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

std::string cpu_online_file(int cpu) { return "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online"; }

std::string offline_record(int cpu) { return "/tmp/eventfs-offline-cpu" + std::to_string(cpu); }

int write_sysfs(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int e = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  ::close(fd);
  return e;
}

bool bring_cpu_online(int cpu) {
  for (int i = 0; i < 50; ++i) {
    if (write_sysfs(cpu_online_file(cpu), "1") == 0) {
      ::unlink(offline_record(cpu).c_str());
      return true;
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

int restore_offline_cpus(bool mine) {
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

CpuOffline::CpuOffline(int cpu) : cpu_(cpu) {
  if (!write_text_file(offline_record(cpu), owner_line())) {
    error_ = errno ? errno : EIO;
    return;
  }
  error_ = write_sysfs(cpu_online_file(cpu), "0");
  if (error_ != 0) ::unlink(offline_record(cpu).c_str());
}

bool CpuOffline::Restore() {
  if (error_ == 0 && !restored_) restored_ = bring_cpu_online(cpu_);
  return error_ != 0 || restored_;
}

// One run of the integration tests at a time on a machine: two at once
// share the kernel's tracing (its CPUs, the top-level instance that some
// tests read, the hot-plugged CPUs, the load), and one run's storms make
// the other's timing tests fail. The lock is held until the process ends.
static void wait_for_other_runs() {
  static constexpr const char* kLockFile = "/tmp/eventfs-it.lock";
  const int fd = ::open(kLockFile, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);  // (flock needs no write access)
  if (fd < 0) {
    std::fprintf(stderr, "[eventfs-it] cannot open %s (%s): not waiting for other runs\n", kLockFile,
                 std::strerror(errno));
    return;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  std::fprintf(stderr, "[eventfs-it] another run of the integration tests holds %s: waiting for it to end\n",
               kLockFile);
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
}

void StaleMountCleaner::SetUp() {
  wait_for_other_runs();
  if (int n = ::geteuid() == 0 ? restore_offline_cpus(false) : 0)
    std::fprintf(stderr, "[eventfs-it] brought %d CPU(s) online that a crashed run had taken offline\n", n);
  int n = clean_stale_mounts();
  if (n) std::fprintf(stderr, "[eventfs-it] took down %d stale mount(s) of earlier runs\n", n);
}

void Watchdog::OnTestProgramStart(const ::testing::UnitTest&) {
  thread_ = std::thread([this] { Watch(); });
}

void Watchdog::OnTestProgramEnd(const ::testing::UnitTest&) {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::OnTestStart(const ::testing::TestInfo& info) {
  std::lock_guard lock(mu_);
  current_ = std::string(info.test_suite_name()) + "." + info.name();
  started_ = Clock::now();
}

void Watchdog::OnTestEnd(const ::testing::TestInfo&) {
  std::lock_guard lock(mu_);
  current_.clear();
}

void Watchdog::Watch() {
  while (!stop_) {
    std::this_thread::sleep_for(100ms);
    std::lock_guard lock(mu_);
    if (!current_.empty() && Clock::now() - started_ > scaled(kPerTestLimit)) {
      std::fprintf(stderr, "[eventfs-it] %s took longer than %lld s: aborting the run\n", current_.c_str(),
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(scaled(kPerTestLimit)).count()));
      std::fflush(stderr);
      restore_offline_cpus(true);  // (no destructor runs after _Exit)
      std::_Exit(3);
    }
  }
}

}  // namespace eventfs_it
