// Stream-test helpers: instance files, stats, CPUs, waiting.
#include "support/stream_util.h"
#include "support/time_scale.h"

#include <cstdlib>

namespace eventfs_it::stream {

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::string instance_dir(const std::string& name) { return std::string(kLiveTracefs) + "/instances/" + name; }

int write_once(const std::string& path, std::string_view data, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = n < 0 ? errno : (static_cast<std::size_t>(n) == data.size() ? 0 : -1);
  ::close(fd);
  return e;
}

std::string errno_text(int e) { return e < 0 ? "short write" : std::strerror(e); }

::testing::AssertionResult Writes(const std::string& path, std::string_view data,
                                  const std::string& error_log) {
  int e = write_once(path, data);
  if (e == 0) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "write of '" << data << "' to " << path << ": " << errno_text(e);
  if (!error_log.empty()) r << "; error_log: " << slurp(error_log);
  return r;
}

::testing::AssertionResult ResizesRings(const std::string& instance_dir, std::string_view kb) {
  if (slurp(instance_dir + "/buffer_size_kb").find("(expanded: ") != std::string::npos)
    if (auto r = Writes(instance_dir + "/events/enable", "0"); !r) return r;
  return Writes(instance_dir + "/buffer_size_kb", kb);
}

bool TopLevelRingsAsBefore(const std::string& before, const std::string& after) {
  if (after == before) return true;
  const std::size_t mark = before.find(" (expanded: ");
  if (mark == std::string::npos || after.find('(') != std::string::npos) return false;
  const unsigned long boot = std::strtoul(before.c_str(), nullptr, 10);
  const unsigned long expanded = std::strtoul(before.c_str() + mark + 12, nullptr, 10);
  const unsigned long now = std::strtoul(after.c_str(), nullptr, 10);
  return now != boot && now >= expanded;
}

std::map<std::string, std::string> parse_stats(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& line : split_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    out[line.substr(0, colon)] = v;
  }
  return out;
}

long long stat_value(const std::string& text, const std::string& key) {
  auto m = parse_stats(text);
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) return -1;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  return end && *end == '\0' ? v : -1;
}

long long kernel_unread_entries(const std::string& inst, int cpus) {
  long long sum = 0;
  for (int c = 0; c < cpus; ++c) {
    long long v = stat_value(slurp(inst + "/per_cpu/cpu" + std::to_string(c) + "/stats"), "entries");
    if (v < 0) return -1;
    sum += v;
  }
  return sum;
}

int mount_cpus(const std::string& mnt) {
  int n = 0;
  while (exists(mnt + "/per_cpu/cpu" + std::to_string(n))) ++n;
  return n;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;  // 0: the calling thread
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + scaled(limit);
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
}

long ms_since(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

bool in_read_syscall(pid_t pid) {
  std::string s;
  if (read_file("/proc/" + std::to_string(pid) + "/syscall", s) != 0) return false;
  return s.rfind(std::to_string(SYS_read) + " ", 0) == 0;
}

}  // namespace eventfs_it::stream
