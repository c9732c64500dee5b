// eventfs-record: records stable events of an eventfs mount into a CTF 1.8
// trace directory (see eventfs-record(1)).

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "record/cpu_recorder.h"
#include "record/event_enabler.h"
#include "record/find_mount.h"
#include "record/mount_layout.h"
#include "record/options.h"
#include "record/tsdl.h"
#include "tracefs/file_io.h"

namespace eventfs::record {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kVersion = "eventfs-record 0.2.0";

struct Failure {
  std::string message;
};

std::string default_out_dir() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "eventfs-record-%Y%m%d-%H%M%S", &tm);
  return buf;
}

// A new directory, or an existing empty one.
void prepare_out_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw Failure{fmt::format("{} exists and is not a directory", dir)};
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw Failure{fmt::format("cannot read {}: {}", dir, std::strerror(errno))};
    bool empty = true;
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    ::closedir(d);
    if (!empty) throw Failure{fmt::format("{} exists and is not empty", dir)};
    return;
  }
  if (::mkdir(dir.c_str(), 0755) != 0) throw Failure{fmt::format("cannot create {}: {}", dir, std::strerror(errno))};
}

void write_whole_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Failure{fmt::format("cannot create {}: {}", path, std::strerror(errno))};
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(path.c_str());
      throw Failure{fmt::format("writing {}: {}", path, std::strerror(e))};
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw Failure{fmt::format("writing {}: {}", path, std::strerror(errno))};
}

std::string human_bytes(std::uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
}

// Runs the command with the signals the recorder holds unblocked. Returns
// its pid, or throws when it cannot be run (exec failed in the child).
pid_t run_command(const std::vector<std::string>& cmd) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw Failure{fmt::format("pipe: {}", std::strerror(errno))};
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    throw Failure{fmt::format("fork: {}", std::strerror(e))};
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(pipefd[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    ::waitpid(pid, nullptr, 0);
    throw Failure{fmt::format("cannot run {}: {}", cmd[0], std::strerror(e))};
  }
  return pid;
}

class Recording {
 public:
  explicit Recording(const Options& o) : opts_(o) {}

  // -m, or the eventfs mount there is.
  std::string mount_point() const {
    if (!opts_.mount.empty()) return opts_.mount;
    auto mountinfo = read_whole_file("/proc/self/mountinfo");
    if (!mountinfo) throw Failure{fmt::format("cannot read /proc/self/mountinfo: {}", std::strerror(mountinfo.code()))};
    auto found = find_eventfs_mount(*mountinfo);
    if (!found) throw Failure{found.reason()};
    return std::move(found).value();
  }

  int run() {
    auto layout = read_mount(mount_point(), opts_.events);
    if (!layout) throw Failure{layout.reason()};
    layout_ = std::move(layout).value();
    out_dir_ = opts_.out_dir.empty() ? default_out_dir() : opts_.out_dir;
    prepare_out_dir(out_dir_);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    write_whole_file(out_dir_ + "/metadata", tsdl_metadata(layout_, host));

    // Bounded memory: a read buffer per CPU of at most 1 MiB, and 16 MiB in all.
    std::size_t read_size = 16u * 1024 * 1024 / layout_.cpus.size();
    read_size = std::clamp<std::size_t>(read_size, 64 * 1024, 1024 * 1024) / 8 * 8;
    for (int cpu : layout_.cpus) {
      auto r = std::make_unique<CpuRecorder>(layout_, cpu, control_, read_size);
      if (Status s = r->open(out_dir_); !s) throw Failure{s.reason()};
      recorders_.push_back(std::move(r));
    }
    // The streams are open before the events are on: nothing is missed.
    for (auto& r : recorders_)
      if (Status s = r->start(); !s) throw Failure{s.reason()};
    std::vector<std::string> names;
    for (const auto& e : layout_.events) names.push_back(e.name);
    enabler_ = std::make_unique<EventEnabler>(layout_.mount);
    if (Status on = enabler_->enable(names); !on) throw Failure{on.reason()};

    if (!opts_.command.empty()) child_ = run_command(opts_.command);
    wait_for_end();
    return finish();
  }

  // On a failure before the end: turn things back off and keep what was written.
  void abort() {
    if (enabler_) (void)enabler_->restore();
    (void)stop_recorders();
  }

 private:
  void wait_for_end() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    const auto start = Clock::now();
    std::optional<Clock::time_point> deadline;
    if (opts_.seconds) deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*opts_.seconds));
    auto last_progress = Clock::time_point{};
    for (;;) {
      timespec ts{0, 100 * 1000 * 1000};
      int sig = ::sigtimedwait(&set, nullptr, &ts);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        signal_ = sig;
        if (child_ > 0) ::kill(child_, sig);
        break;
      }
      if (child_ > 0) {
        int st = 0;
        if (::waitpid(child_, &st, WNOHANG) == child_) {
          child_ = -1;
          child_status_ = st;
          break;
        }
      }
      if (control_.failed) break;
      auto now = Clock::now();
      if (deadline && now >= *deadline) break;
      if (tty && now - last_progress >= std::chrono::milliseconds(250)) {
        last_progress = now;
        auto t = totals();
        std::fprintf(stderr, "\r\033[Keventfs-record: %llu events, %llu lost, %s",
                     static_cast<unsigned long long>(t.events), static_cast<unsigned long long>(t.lost),
                     human_bytes(t.bytes).c_str());
        std::fflush(stderr);
        progress_shown_ = true;
      }
    }
  }

  struct Totals {
    std::uint64_t events = 0, lost = 0, bytes = 0, skipped = 0;
  };
  Totals totals() const {
    Totals t;
    for (const auto& r : recorders_) {
      t.events += r->events();
      t.lost += r->lost();
      t.bytes += r->bytes();
      t.skipped += r->skipped();
    }
    return t;
  }

  // The recorders' first error, once all are done.
  Status stop_recorders() {
    control_.phase = control_.failed ? RecordControl::kStop : RecordControl::kDrain;
    Status first;
    for (auto& r : recorders_)
      if (Status s = r->join(); !s && first) first = std::move(s);
    return first;
  }

  int finish() {
    std::string restore_error = enabler_->restore().reason();
    Status recorded = stop_recorders();
    if (child_ > 0) {
      // Signalled above: give it a moment to end.
      for (int i = 0; i < 40 && child_ > 0; ++i) {
        int st = 0;
        if (::waitpid(child_, &st, WNOHANG) == child_) {
          child_ = -1;
          child_status_ = st;
        } else {
          ::usleep(50 * 1000);
        }
      }
    }
    if (progress_shown_) std::fputs("\r\033[K", stderr);
    std::string error = recorded ? restore_error : recorded.reason();
    if (!error.empty()) {
      std::fprintf(stderr, "eventfs-record: %s\n", error.c_str());
      return 1;
    }
    auto t = totals();
    std::uint64_t packets = 0;  // the writers' own count, read once their threads are done
    for (const auto& r : recorders_) packets += r->writer().packets();
    std::string extra;
    if (t.skipped) extra += fmt::format(", {} records of other events skipped", t.skipped);
    if (child_status_ && WIFEXITED(*child_status_) && WEXITSTATUS(*child_status_) != 0)
      extra += fmt::format(", {} exited with status {}", opts_.command[0], WEXITSTATUS(*child_status_));
    if (child_status_ && WIFSIGNALED(*child_status_))
      extra += fmt::format(", {} ended by signal {}", opts_.command[0], WTERMSIG(*child_status_));
    std::fprintf(stderr, "eventfs-record: %llu events, %llu lost, %s in %llu packets from %zu CPUs written to %s%s\n",
                 static_cast<unsigned long long>(t.events), static_cast<unsigned long long>(t.lost),
                 human_bytes(t.bytes).c_str(), static_cast<unsigned long long>(packets), recorders_.size(),
                 out_dir_.c_str(), extra.c_str());
    return 0;
  }

  const Options& opts_;
  MountLayout layout_;
  std::string out_dir_;
  RecordControl control_;
  std::vector<std::unique_ptr<CpuRecorder>> recorders_;
  std::unique_ptr<EventEnabler> enabler_;
  pid_t child_ = -1;
  std::optional<int> child_status_;
  int signal_ = 0;
  bool progress_shown_ = false;
};

}  // namespace
}  // namespace eventfs::record

int main(int argc, char** argv) {
  using namespace eventfs::record;
  // The signals that end a recording are taken by the main thread only (in
  // sigtimedwait), so that the events are turned back off whatever stops it.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto parsed = parse_options(argc, argv);
  if (!parsed) {
    std::fprintf(stderr, "eventfs-record: %s (see eventfs-record -h)\n", parsed.error().message.c_str());
    return 2;
  }
  const Options& opts = *parsed;
  if (opts.help) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  if (opts.version) {
    std::puts(kVersion);
    return 0;
  }
  Recording rec(opts);
  try {
    return rec.run();
  } catch (const Failure& f) {
    rec.abort();
    std::fprintf(stderr, "eventfs-record: %s\n", f.message.c_str());
  } catch (const std::exception& e) {
    rec.abort();
    std::fprintf(stderr, "eventfs-record: %s\n", e.what());
  }
  return 1;
}
