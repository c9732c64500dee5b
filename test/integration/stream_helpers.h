// Helpers for the record-stream integration tests (stream_test.cc): readers
// of eventfs's streams that never block the test, child `cat` readers that
// are always killed, a reference tracefs instance of our own decoded with
// libtraceevent (independently of eventfs's code), and threads that make
// known context switches or trace_marker writes.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>
#include <functional>
#include <memory>
#include <regex>
#include <string_view>

#include <traceevent/event-parse.h>
extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include "eventfs/record.h"
#include "mounted_eventfs.h"

namespace eventfs_it::stream {

inline pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

inline std::string instance_dir(const std::string& name) { return std::string(kLiveTracefs) + "/instances/" + name; }

// One open and one write(2) of exactly `data` (what `echo -n data > path`
// does). 0, the errno, or -1 for a short write.
inline int write_once(const std::string& path, std::string_view data, int flags = O_WRONLY | O_TRUNC) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = n < 0 ? errno : (static_cast<std::size_t>(n) == data.size() ? 0 : -1);
  ::close(fd);
  return e;
}

inline std::string errno_text(int e) { return e < 0 ? "short write" : std::strerror(e); }

// A write that must be accepted (the mount's error_log, if any, in the message).
inline ::testing::AssertionResult Writes(const std::string& path, std::string_view data,
                                         const std::string& error_log = "") {
  int e = write_once(path, data);
  if (e == 0) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "write of '" << data << "' to " << path << ": " << errno_text(e);
  if (!error_log.empty()) r << "; error_log: " << slurp(error_log);
  return r;
}

// "key: value" lines (tracefs and eventfs stats files) -> map; the value trimmed.
inline std::map<std::string, std::string> parse_stats(const std::string& text) {
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

// A numeric value of a stats text; -1 if missing or not a number.
inline long long stat_value(const std::string& text, const std::string& key) {
  auto m = parse_stats(text);
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) return -1;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  return end && *end == '\0' ? v : -1;
}

// The kernel's count of unread entries of an instance, summed over CPUs.
inline long long kernel_unread_entries(const std::string& inst, int cpus) {
  long long sum = 0;
  for (int c = 0; c < cpus; ++c) {
    long long v = stat_value(slurp(inst + "/per_cpu/cpu" + std::to_string(c) + "/stats"), "entries");
    if (v < 0) return -1;
    sum += v;
  }
  return sum;
}

// CPUs of a mount: its per_cpu/cpuN directories.
inline int mount_cpus(const std::string& mnt) {
  int n = 0;
  while (exists(mnt + "/per_cpu/cpu" + std::to_string(n))) ++n;
  return n;
}

// CPUs this process may run on.
inline std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

inline bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;  // 0: the calling thread
}

// Polls `pred` every 2 ms until it holds or `limit` passes.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
}

inline long ms_since(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// ---------------------------------------------------------------------------
// Processes blocked in read(2).

// Is `pid` (a process or a thread id) inside read(2) right now?
inline bool in_read_syscall(pid_t pid) {
  std::string s;
  if (read_file("/proc/" + std::to_string(pid) + "/syscall", s) != 0) return false;
  return s.rfind(std::to_string(SYS_read) + " ", 0) == 0;
}

// Child processes (readers) that are killed and reaped whatever happens.
class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children();

  // `cat path` with its stdout in a memfd.
  pid_t SpawnCat(const std::string& path) {
    int out = make_capture_fd("cat-out");
    int err = make_capture_fd("cat-err");
    pid_t pid = spawn({"/bin/cat", path}, out, err);
    kids_.push_back({pid, out, err, std::nullopt});
    return pid;
  }

  std::size_t size() const { return kids_.size(); }
  pid_t pid(std::size_t i) const { return kids_[i].pid; }
  std::string Out(std::size_t i) const { return read_capture(kids_[i].out); }
  std::string Err(std::size_t i) const { return read_capture(kids_[i].err); }
  std::optional<int> Status(std::size_t i) const { return kids_[i].status; }

  // Every live child in read(2), within `limit`.
  bool WaitAllInRead(std::chrono::milliseconds limit) {
    return wait_until(
        [&] {
          for (auto& k : kids_)
            if (k.status || !in_read_syscall(k.pid)) return false;
          return true;
        },
        limit);
  }

  // How many are still running (not reaped) and inside read(2).
  std::size_t CountBlocked() {
    Reap();
    std::size_t n = 0;
    for (auto& k : kids_)
      if (!k.status && in_read_syscall(k.pid)) ++n;
    return n;
  }

  // Waits until child i exits; its wait status, or nullopt after `limit`.
  std::optional<int> Wait(std::size_t i, std::chrono::milliseconds limit) {
    Kid& k = kids_[i];
    if (k.status) return k.status;
    int st = 0;
    if (wait_exit(k.pid, limit, st)) k.status = st;
    return k.status;
  }

  void Signal(std::size_t i, int sig) {
    if (!kids_[i].status) ::kill(kids_[i].pid, sig);
  }

  // Signals every live child and waits (bounded) for them all; true if all exited.
  bool KillAll(int sig, std::chrono::milliseconds limit) {
    for (auto& k : kids_)
      if (!k.status) ::kill(k.pid, sig);
    auto deadline = Clock::now() + limit;
    bool all = true;
    for (std::size_t i = 0; i < kids_.size(); ++i) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (!Wait(i, std::max(left, 0ms))) all = false;
    }
    return all;
  }

  void Reap() {
    for (auto& k : kids_) {
      if (k.status) continue;
      int st = 0;
      if (::waitpid(k.pid, &st, WNOHANG) == k.pid) k.status = st;
    }
  }


 private:
  struct Kid {
    pid_t pid;
    int out, err;
    std::optional<int> status;
  };
  std::vector<Kid> kids_;
};

inline Children::~Children() {
  // A reader the daemon never answers stays until the mount ends.
  KillAll(SIGKILL, 1s);
  for (auto& k : kids_) {
    if (k.out >= 0) ::close(k.out);
    if (k.err >= 0) ::close(k.err);
  }
}

inline std::string describe_status(std::optional<int> st) {
  if (!st) return "still running";
  if (WIFEXITED(*st)) return "exit " + std::to_string(WEXITSTATUS(*st));
  if (WIFSIGNALED(*st)) return std::string("killed by ") + strsignal(WTERMSIG(*st));
  return "status " + std::to_string(*st);
}

// One read(2) of a file from a thread of its own, so a read that waits
// where it should not cannot hang the test: Wait() gives up after its limit,
// Release() makes whatever it takes for the read to return (enabling an
// event, say), and a read that still does not return is left to the end of
// the mount (the thread then owns the descriptor and closes it).
class ThreadedRead {
 public:
  ThreadedRead(int fd, std::size_t size) : st_(std::make_shared<State>()) {
    st_->fd = fd;
    thread_ = std::thread([st = st_, size] {
      st->tid = current_tid();
      std::vector<char> buf(size);
      ssize_t n = ::read(st->fd, buf.data(), buf.size());
      int e = errno;
      std::lock_guard lock(st->mu);
      st->n = n;
      st->err = e;
      if (n > 0) st->data.assign(buf.data(), static_cast<std::size_t>(n));
      st->done = true;
      if (st->abandoned) ::close(st->fd);
    });
  }
  ~ThreadedRead() { Finish(); }
  ThreadedRead(const ThreadedRead&) = delete;
  ThreadedRead& operator=(const ThreadedRead&) = delete;

  pid_t tid() const { return st_->tid; }
  pthread_t handle() { return thread_.native_handle(); }
  bool done() const { return st_->done; }
  bool Wait(std::chrono::milliseconds limit) {
    return wait_until([&] { return st_->done.load(); }, limit);
  }
  ssize_t n() const { return st_->n; }
  int err() const { return st_->err; }
  std::string data() {
    std::lock_guard lock(st_->mu);
    return st_->data;
  }

  // Returns the read: `release` is called if it has not returned yet. True
  // if the thread ended (it is joined; the caller still owns the fd).
  bool Finish(const std::function<void()>& release = {}, std::chrono::milliseconds limit = 3s) {
    if (!thread_.joinable()) return joined_;
    if (!st_->done && release) release();
    if (Wait(limit)) {
      thread_.join();
      joined_ = true;
      return true;
    }
    {
      std::lock_guard lock(st_->mu);
      if (!st_->done) st_->abandoned = true;
    }
    if (st_->done) {
      thread_.join();
      joined_ = true;
      return true;
    }
    thread_.detach();
    return false;
  }

 private:
  struct State {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> done{false};
    std::mutex mu;
    bool abandoned = false;
    ssize_t n = 0;
    int err = 0;
    int fd = -1;
    std::string data;
  };
  std::shared_ptr<State> st_;
  std::thread thread_;
  bool joined_ = false;
};

// ---------------------------------------------------------------------------
// Reading eventfs's streams without ever blocking the test: poll(2) on the
// files, then a non-blocking read of 64 KiB (EVENTFS_RECORD_MAX_SIZE) from each
// ready one. Text streams are split into lines; binary ones into records,
// each checked against include/eventfs/record.h.

struct Record {
  std::size_t stream;  // index into the collector's paths
  eventfs_record_header header;
  std::string payload;  // header.size - 16 bytes, padding included
};

class Collector {
 public:
  Collector(std::vector<std::string> paths, bool binary) : paths_(std::move(paths)), binary_(binary) {}
  ~Collector() { Stop(); }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  ::testing::AssertionResult Start() {
    for (const auto& p : paths_) {
      int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        int e = errno;
        Close();
        return ::testing::AssertionFailure() << "open " << p << ": " << std::strerror(e);
      }
      fds_.push_back(fd);
    }
    partial_.resize(paths_.size());
    last_data_ = Clock::now();
    thread_ = std::thread([this] { Run(); });
    return ::testing::AssertionSuccess();
  }

  // Stops reading and closes the files.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    Close();
  }

  std::vector<std::string> Lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::vector<Record> Records() {
    std::lock_guard lock(mu_);
    return records_;
  }
  std::size_t LineCount() {
    std::lock_guard lock(mu_);
    return lines_.size();
  }
  std::size_t RecordCount() {
    std::lock_guard lock(mu_);
    return records_.size();
  }
  std::uint64_t Bytes() {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  // Read errors, malformed records, text not ending in a newline...
  std::vector<std::string> Problems() {
    std::lock_guard lock(mu_);
    auto p = problems_;
    for (std::size_t i = 0; i < partial_.size(); ++i)
      if (!partial_[i].empty()) p.push_back(paths_[i] + ": unterminated text at the end: " + partial_[i]);
    return p;
  }

  // Waits until `pred` holds (it may call the accessors above).
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    return wait_until(pred, limit);
  }

  // Waits until nothing has come for `quiet`; false if data kept coming for `limit`.
  bool WaitQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    for (;;) {
      Clock::time_point last;
      {
        std::lock_guard lock(mu_);
        last = last_data_;
      }
      if (Clock::now() - last >= quiet) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
  }

 private:
  void Close() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

  void Run() {
    std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
    std::vector<pollfd> pfds;
    for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
    while (!stop_) {
      for (auto& p : pfds) p.revents = 0;
      int r = ::poll(pfds.data(), pfds.size(), 20);
      if (r < 0 && errno != EINTR) {
        Problem(std::string("poll: ") + std::strerror(errno));
        std::this_thread::sleep_for(20ms);
        continue;
      }
      // Read every stream after each poll round, ready or not: a stream whose
      // poll notification is late must still be drained (poll itself is
      // tested on its own).
      for (std::size_t i = 0; i < fds_.size(); ++i) {
        for (int rounds = 0; rounds < 64 && !stop_; ++rounds) {
          ssize_t n = ::read(fds_[i], buf.data(), buf.size());
          if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) Problem(paths_[i] + ": read: " + std::strerror(errno));
            break;
          }
          if (n == 0) break;  // end of file: the mount is going away
          Consume(i, buf.data(), static_cast<std::size_t>(n));
        }
      }
    }
  }

  void Problem(const std::string& p) {
    std::lock_guard lock(mu_);
    if (problems_.size() < 20) problems_.push_back(p);
  }

  void Consume(std::size_t i, const char* data, std::size_t n) {
    std::lock_guard lock(mu_);
    bytes_ += n;
    last_data_ = Clock::now();
    if (!binary_) {
      std::string& part = partial_[i];
      part.append(data, n);
      std::size_t start = 0;
      for (std::size_t nl; (nl = part.find('\n', start)) != std::string::npos; start = nl + 1)
        lines_.push_back(part.substr(start, nl - start));
      part.erase(0, start);
      return;
    }
    // A read returns whole records only.
    std::size_t off = 0;
    while (off < n) {
      eventfs_record_header h;
      if (n - off < sizeof h) {
        if (problems_.size() < 20)
          problems_.push_back(paths_[i] + ": a read ended inside a record header (" + std::to_string(n - off) +
                              " bytes left of " + std::to_string(n) + ")");
        return;
      }
      std::memcpy(&h, data + off, sizeof h);
      // eventfs_record_check wants an aligned header: check a copy.
      alignas(8) char copy[sizeof(eventfs_record_header) + sizeof(eventfs_lost)] = {};
      std::memcpy(copy, data + off, std::min(sizeof copy, n - off));
      auto* hc = reinterpret_cast<eventfs_record_header*>(copy);
      // The size rules (against what the read returned), and a lost record's payload size.
      if (eventfs_record_check(hc, n - off) == 0) {
        if (problems_.size() < 20)
          problems_.push_back(paths_[i] + ": malformed record at offset " + std::to_string(off) + " of a " +
                              std::to_string(n) + "-byte read: size " + std::to_string(h.size) + " id " +
                              std::to_string(h.id));
        return;
      }
      Record rec;
      rec.stream = i;
      rec.header = h;
      rec.payload.assign(data + off + sizeof h, h.size - sizeof h);
      records_.push_back(std::move(rec));
      off += h.size;
    }
  }

  std::vector<std::string> paths_;
  bool binary_;
  std::vector<int> fds_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> partial_;
  std::vector<std::string> lines_;
  std::vector<Record> records_;
  std::vector<std::string> problems_;
  std::uint64_t bytes_ = 0;
  Clock::time_point last_data_;
};

// ---------------------------------------------------------------------------
// Context switches between two known threads.

struct PingPongResult {
  pid_t ping = 0, pong = 0;
  int rounds_done = 0;
};

// Two threads named `ping_name` and `pong_name` (prctl PR_SET_NAME) hand a
// byte back and forth `rounds` times over pipes. Pinned to one CPU (cpu >= 0)
// every hand-over is a direct switch from one to the other.
inline PingPongResult ping_pong(int rounds, int cpu = -1, const char* ping_name = "efs-ping",
                                const char* pong_name = "efs-pong") {
  PingPongResult res;
  int a[2], b[2];
  if (::pipe2(a, O_CLOEXEC) != 0) return res;
  if (::pipe2(b, O_CLOEXEC) != 0) {
    ::close(a[0]);
    ::close(a[1]);
    return res;
  }
  std::atomic<pid_t> ping_tid{0}, pong_tid{0};
  std::atomic<int> done{0};
  std::thread pong([&] {
    ::prctl(PR_SET_NAME, pong_name, 0, 0, 0);
    if (cpu >= 0) pin_current_thread(cpu);
    pong_tid = current_tid();
    char c;
    for (int i = 0; i < rounds; ++i) {
      if (::read(a[0], &c, 1) != 1) break;
      if (::write(b[1], &c, 1) != 1) break;
    }
  });
  std::thread ping([&] {
    ::prctl(PR_SET_NAME, ping_name, 0, 0, 0);
    if (cpu >= 0) pin_current_thread(cpu);
    ping_tid = current_tid();
    char c = 'x';
    int i = 0;
    for (; i < rounds; ++i) {
      if (::write(a[1], &c, 1) != 1) break;
      if (::read(b[0], &c, 1) != 1) break;
    }
    done = i;
  });
  ping.join();
  pong.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  res.ping = ping_tid;
  res.pong = pong_tid;
  res.rounds_done = done;
  return res;
}

// ---------------------------------------------------------------------------
// sched_switch records, as a comparable tuple.

struct Switch {
  pid_t prev_pid = 0;
  std::string prev_comm;
  char prev_state = 0;
  std::string next_comm;
  pid_t next_pid = 0;
  pid_t common_pid = -1;  // where known
  int cpu = -1;           // the stream (or per-CPU file) it came from
};

// "<pid> [<cpu>] <secs>.<usecs>: sched_switch: prev_comm=... next_pid=N" -> Switch.
inline bool parse_switch_line(const std::string& line, Switch& out) {
  static const std::regex re(
      "^(-?\\d+) \\[(\\d{3})\\] \\d+\\.\\d{6}: sched_switch: prev_comm=(.*) prev_pid=(-?\\d+) "
      "prev_state=(.?) next_comm=(.*) next_pid=(-?\\d+)$");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  out.common_pid = std::stoi(m[1]);
  out.cpu = std::stoi(m[2]);
  out.prev_comm = m[3];
  out.prev_pid = std::stoi(m[4]);
  out.prev_state = m[5].length() ? m[5].str()[0] : 0;
  out.next_comm = m[6];
  out.next_pid = std::stoi(m[7]);
  return true;
}

// The stable sched_switch payload (record.h's example struct).
inline bool parse_switch_payload(const std::string& p, Switch& out) {
  if (p.size() < 44) return false;
  auto text = [&](std::size_t off, std::size_t n) {
    std::size_t len = 0;
    while (len < n && p[off + len]) ++len;
    return p.substr(off, len);
  };
  out.prev_comm = text(0, 16);
  std::int32_t v;
  std::memcpy(&v, p.data() + 16, 4);
  out.prev_pid = v;
  out.prev_state = p[20];
  out.next_comm = text(21, 16);
  std::memcpy(&v, p.data() + 40, 4);
  out.next_pid = v;
  return true;
}

// ---------------------------------------------------------------------------
// A tracefs instance of the test's own, read with libtraceevent.

// /sys/kernel/tracing/instances/eventfs-it-ref-<pid>, removed at the end. An
// owner file in /tmp/eventfs-it-ref-<pid> (the convention of mounted_eventfs.h)
// keeps a concurrent run's StaleMountCleaner off it, and lets a later run
// remove it if this one crashes.
class RefInstance {
 public:
  RefInstance() {
    name_ = "eventfs-it-ref-" + std::to_string(::getpid());
    owner_dir_ = std::string(kTempPrefix) + "ref-" + std::to_string(::getpid());
    path_ = instance_dir(name_);
    ::mkdir(owner_dir_.c_str(), 0755);
    write_text_file(owner_dir_ + "/owner", owner_line());
    if (exists(path_)) Remove();  // a leftover of this pid's earlier test
    if (::mkdir(path_.c_str(), 0755) != 0) error_ = "mkdir " + path_ + ": " + std::strerror(errno);
  }
  ~RefInstance() {
    Remove();
    ::unlink((owner_dir_ + "/owner").c_str());
    ::rmdir(owner_dir_.c_str());
  }
  RefInstance(const RefInstance&) = delete;
  RefInstance& operator=(const RefInstance&) = delete;

  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  void Remove() {
    write_once(path_ + "/events/enable", "0");
    wait_until([&] { return ::rmdir(path_.c_str()) == 0 || errno == ENOENT; }, 2s);
  }
  std::string name_, owner_dir_, path_, error_;
};

// The letters of a task-state __print_flags() table, in table order, read
// from a tracefs format's print fmt: { 0x00000001, "S" }, ...
inline std::vector<std::pair<unsigned long long, char>> task_state_table(const std::string& format) {
  std::vector<std::pair<unsigned long long, char>> out;
  auto at = format.find("__print_flags(");
  if (at == std::string::npos) return out;
  static const std::regex re("\\{ *(0x[0-9a-fA-F]+|\\d+) *, *\"([^\"]*)\" *\\}");
  std::string rest = format.substr(at);
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), re); it != std::sregex_iterator(); ++it) {
    std::string letters = (*it)[2];
    if (letters.empty()) continue;
    out.emplace_back(std::stoull((*it)[1], nullptr, 0), letters[0]);
  }
  return out;
}

// The letter of the first table entry whose bit is set, 'R' if none.
inline char task_state_letter(const std::vector<std::pair<unsigned long long, char>>& table,
                              unsigned long long state) {
  for (const auto& [bit, letter] : table)
    if (state & bit) return letter;
  return 'R';
}

struct ReferenceRead {
  std::vector<Switch> switches;
  long long missed = 0;  // sub-buffers that reported lost events
  std::size_t subbufs = 0;
  std::string error;
};

// Drains every CPU's trace_pipe_raw of `inst` (read(2), non-blocking, one
// sub-buffer per read) and decodes its sched_switch records with
// libtraceevent: kbuffer walks the sub-buffers, tep_parse_format reads the
// instance's events/sched/sched_switch/format.
inline ReferenceRead read_reference_switches(const std::string& inst, int cpus) {
  ReferenceRead res;
  std::string format = slurp(inst + "/events/sched/sched_switch/format");
  auto table = task_state_table(format);
  if (table.empty()) {
    res.error = "no __print_flags table in " + inst + "/events/sched/sched_switch/format";
    return res;
  }
  tep_handle* tep = tep_alloc();
  tep_event* ev = nullptr;
  if (tep_parse_format(tep, &ev, format.data(), format.size(), "sched") != 0 || !ev) {
    res.error = "tep_parse_format failed on sched_switch's format";
    tep_free(tep);
    return res;
  }
  tep_format_field* f_prev_comm = tep_find_field(ev, "prev_comm");
  tep_format_field* f_prev_pid = tep_find_field(ev, "prev_pid");
  tep_format_field* f_prev_state = tep_find_field(ev, "prev_state");
  tep_format_field* f_next_comm = tep_find_field(ev, "next_comm");
  tep_format_field* f_next_pid = tep_find_field(ev, "next_pid");
  tep_format_field* f_common_pid = tep_find_common_field(ev, "common_pid");
  if (!f_prev_comm || !f_prev_pid || !f_prev_state || !f_next_comm || !f_next_pid || !f_common_pid) {
    res.error = "sched_switch's format lacks a field";
    tep_free(tep);
    return res;
  }
  long kb = std::strtol(slurp(inst + "/buffer_subbuf_size_kb").c_str(), nullptr, 10);
  std::size_t subbuf = kb > 0 ? static_cast<std::size_t>(kb) * 1024 : static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<char> page(subbuf);
  kbuffer* kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
  auto comm = [](const tep_format_field* f, const void* data) {
    const char* p = static_cast<const char*>(data) + f->offset;
    std::size_t len = 0;
    while (len < static_cast<std::size_t>(f->size) && p[len]) ++len;
    return std::string(p, len);
  };
  for (int cpu = 0; cpu < cpus && res.error.empty(); ++cpu) {
    std::string path = inst + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      res.error = "open " + path + ": " + std::strerror(errno);
      break;
    }
    for (;;) {
      ssize_t n = ::read(fd, page.data(), page.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n < 0) {
        res.error = "read " + path + ": " + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      if (kbuffer_load_subbuffer(kbuf, page.data()) != 0) {
        res.error = "kbuffer_load_subbuffer failed on " + path;
        break;
      }
      ++res.subbufs;
      if (kbuffer_missed_events(kbuf) != 0) ++res.missed;
      unsigned long long ts = 0;
      for (void* data = kbuffer_read_event(kbuf, &ts); data; data = kbuffer_next_event(kbuf, &ts)) {
        std::uint16_t type;
        std::memcpy(&type, data, sizeof type);
        if (type != ev->id) continue;
        unsigned long long v = 0;
        Switch s;
        s.cpu = cpu;
        s.prev_comm = comm(f_prev_comm, data);
        s.next_comm = comm(f_next_comm, data);
        tep_read_number_field(f_prev_pid, data, &v);
        s.prev_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_next_pid, data, &v);
        s.next_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_common_pid, data, &v);
        s.common_pid = static_cast<pid_t>(v);
        tep_read_number_field(f_prev_state, data, &v);
        s.prev_state = task_state_letter(table, v);
        res.switches.push_back(std::move(s));
      }
    }
    ::close(fd);
  }
  kbuffer_free(kbuf);
  tep_free(tep);
  return res;
}

// ---------------------------------------------------------------------------
// trace_marker writes: ftrace:print records in an instance.

inline std::string marker_text(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "m-%06d", i);
  return buf;
}

// "m-000123" -> 123; -1 otherwise.
inline int marker_number(const std::string& s) {
  if (s.size() != 8 || s.compare(0, 2, "m-") != 0) return -1;
  for (std::size_t i = 2; i < 8; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  return std::stoi(s.substr(2));
}

struct MarkerWriteResult {
  pid_t tid = 0;
  int written = 0;
  std::string error;
};

// Writes markers m-<first>..m-<first+n-1> (one write(2) each, no newline) to
// `trace_marker` from a thread pinned to `cpu`; a pause of `pause` after
// every `burst` writes (0: as fast as possible).
inline MarkerWriteResult write_markers(const std::string& trace_marker, int cpu, int n, int burst = 0,
                                       std::chrono::microseconds pause = 0us) {
  MarkerWriteResult res;
  std::thread t([&] {
    if (!pin_current_thread(cpu)) {
      res.error = "cannot pin to CPU " + std::to_string(cpu);
      return;
    }
    res.tid = current_tid();
    int fd = ::open(trace_marker.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      res.error = "open " + trace_marker + ": " + std::strerror(errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      std::string m = marker_text(i);
      if (::write(fd, m.data(), m.size()) != static_cast<ssize_t>(m.size())) {
        res.error = "write " + trace_marker + ": " + std::strerror(errno);
        break;
      }
      ++res.written;
      if (burst > 0 && (i + 1) % burst == 0) std::this_thread::sleep_for(pause);
    }
    ::close(fd);
  });
  t.join();
  return res;
}

// The default catalog plus `marker` over ftrace:print, written into `dir`.
inline constexpr const char* kMarkerEvent =
    "\n# A test event over trace_marker writes.\n"
    "STABLE_EVENT(marker, ftrace:print, id=1000,\n"
    "\t__array(char, text, 64) = buf\n"
    ")\n";

inline std::string write_marker_catalog(const TempDir& dir) {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string path = dir / "with-marker.catalog";
  if (text.rfind("<read", 0) == 0 || !write_text_file(path, text + kMarkerEvent)) return "";
  return path;
}

// eventfs over the default catalog plus `marker`, with `extra` options (a
// catalog that cannot be written makes the daemon, and so Start(), fail).
inline std::vector<std::string> marker_mount_args(const TempDir& dir, const std::vector<std::string>& extra) {
  std::string catalog = write_marker_catalog(dir);
  std::vector<std::string> args{"-o", "catalog=" + (catalog.empty() ? dir / "unwritten.catalog" : catalog)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct MarkerMount {
  explicit MarkerMount(const std::vector<std::string>& extra = {}) : m(marker_mount_args(dir, extra)) {}
  TempDir dir;  // the catalog, for as long as the mount
  MountedEventfs m;
};

}  // namespace eventfs_it::stream
