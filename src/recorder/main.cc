// eventfs-record: records stable events of an eventfs mount into a CTF 1.8
// trace directory or a trace.dat (see eventfs-record(1)).

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
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/priority.h"
#include "error/result.h"
#include "eventfs_config.h"
#include "recorder/cpu_recorder.h"
#include "recorder/event_holds.h"
#include "recorder/find_mount.h"
#include "recorder/mount_layout.h"
#include "recorder/options.h"
#include "recorder/reader_threads.h"
#include "recorder/cpu_stats_lines.h"
#include "recorder/recording_output.h"
#include "tracefs/file_io.h"

namespace eventfs::recorder {
namespace {

using Clock = std::chrono::steady_clock;


// The one line a failed recording ends with, and its exit status.
int report_failure(const std::string& reason) {
  std::fprintf(stderr, "eventfs-record: %s\n", reason.c_str());
  return 1;
}

// An errno's failure with the reason "<what>: <strerror>".
Error errno_failure(int e, const std::string& what) { return fail(e, fmt::format("{}: {}", what, std::strerror(e))); }

std::string human_bytes(std::uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
}

// Runs the command with the signals the recorder holds unblocked. Returns
// its pid, or an error when it cannot be run (exec failed in the child).
Result<pid_t> run_command(const std::vector<std::string>& cmd) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    int e = errno;
    return errno_failure(e, "pipe");
  }
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return errno_failure(e, "fork");
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
    return errno_failure(e, "cannot run " + cmd[0]);
  }
  return pid;
}

// How long a command gets to end after the signal the recorder sends it,
// before SIGKILL.
constexpr auto kCommandGrace = std::chrono::seconds(2);

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
  }
}

// The readers' nice value: -n, or 10 below eventfs-record's own.
int readers_nice(const Options& o) { return o.nice ? *o.nice : nice_below_own(10); }

class Recording {
 public:
  explicit Recording(const Options& o) : opts_(o) {}

  // Everything before the recording proper: the mount read, the trace's
  // metadata written, the streams open, the events held, the start time
  // read, the reader threads started and the command run.
  Status start() {
    if (Status s = read_layout(); !s) return s;
    output_ = make_output(opts_, layout_);
    if (Status s = output_->prepare(); !s) return s;
    if (Status s = open_streams(); !s) return s;
    if (Status s = hold_events(); !s) return s;
    if (Status s = read_start(); !s) return s;
    if (Status s = output_->started(clock_offset_); !s) return s;
    threads_ = std::make_unique<ReaderThreads>(recorder_ptrs(), control_, readers_nice(opts_));
    if (Status s = threads_->start(); !s) return s;
    // A nice value asked for and refused is said; the default one (lower
    // than a user without CAP_SYS_NICE may set) is tried quietly.
    if (int e = threads_->nice_refused(); e != 0 && opts_.nice)
      std::fprintf(stderr, "eventfs-record: cannot set the readers' nice value to %d: %s\n", *opts_.nice,
                   std::strerror(e));
    return run_the_command();
  }

  // Until a signal, the end of -t or of the command, or a recorder's error.
  void wait_for_end();

  // Lets the events go, drains and closes the streams, and ends a command
  // still running (on a recorder's error); the first recorder's error.
  Status finish() {
    // A signal that ended the recording goes on to the command at once.
    if (signal_ && child_ > 0) ::kill(child_, signal_);
    read_end();
    holds_.reset();
    Status recorded = stop_recorders();
    if (progress_shown_) std::fputs("\r\033[K", stderr);
    if (!recorded) {
      if (int sig = end_command(SIGTERM); sig != 0)
        return fail(recorded.code(), fmt::format("{} ({} was ended with {})", recorded.reason(), opts_.command[0],
                                                 signal_name(sig)));
      return recorded;
    }
    (void)end_command(signal_, /*send=*/false);
    return recorded;
  }

  void print_summary() const;

  // On a failure before the end: let things go and keep what was written.
  void abort() {
    holds_.reset();
    (void)stop_recorders();
    (void)end_command(SIGTERM);
  }

 private:
  // -m, or the eventfs mount there is.
  Result<std::string> mount_point() const {
    if (!opts_.mount.empty()) return opts_.mount;
    auto mountinfo = read_whole_file("/proc/self/mountinfo");
    if (!mountinfo) return errno_failure(mountinfo.code(), "cannot read /proc/self/mountinfo");
    return find_eventfs_mount(*mountinfo);
  }

  Status read_layout() {
    auto mount = mount_point();
    if (!mount) return std::move(mount).error();
    auto layout = read_mount(*mount, opts_.events);
    if (!layout) return std::move(layout).error();
    layout_ = std::move(layout).value();
    return {};
  }

  // A recorder per CPU, its sink made by the output and its stream open
  // (eventfs reads the rings from then on).
  Status open_streams() {
    for (int cpu : layout_.cpus) {
      auto sink = output_->open_cpu(cpu, layout_.cpus.size());
      if (!sink) return std::move(sink).error();
      auto r = std::make_unique<CpuRecorder>(layout_, cpu, control_);
      Status s = r->open(std::move(sink).value());
      recorders_.push_back(std::move(r));
      if (!s) return s;
    }
    return {};
  }

  std::vector<CpuRecorder*> recorder_ptrs() {
    std::vector<CpuRecorder*> out;
    for (auto& r : recorders_) out.push_back(r.get());
    return out;
  }

  // The streams are open before the events are held: nothing is missed.
  Status hold_events() {
    std::vector<std::string> names;
    for (const auto& e : layout_.events) names.push_back(e.name);
    holds_ = std::make_unique<EventHolds>(layout_.mount);
    return holds_->hold(names);
  }

  // Once the events are on: what is older was in the rings before. Each
  // CPU's own clock (a CPU-local trace clock need not agree between CPUs).
  // The first CPU's clock, read kOffsetReadings times with the real time
  // read on either side of each, places the clock's zero in real time: the
  // reading whose two real times are closest, at their middle (a reading
  // goes through the daemon, and the first of a file also looks it up and
  // opens it: the clock can be read anywhere in between).
  static constexpr int kOffsetReadings = 5;
  Status read_start() {
    for (auto& r : recorders_) {
      const bool first = &r == &recorders_.front();
      std::int64_t narrowest = -1;
      for (int i = 0; i < (first ? kOffsetReadings : 1); ++i) {
        const std::int64_t before = realtime_ns();
        auto now = read_clock_now(layout_.mount, r->cpu());
        if (!now) return std::move(now).error();
        const std::int64_t after = realtime_ns();
        if (first && (narrowest < 0 || after - before < narrowest)) {
          narrowest = after - before;
          clock_offset_ = clock_offset(*now, before + (after - before) / 2, layout_.clock_decl.freq);
        }
        r->set_start(*now);
      }
    }
    return {};
  }

  // As it ends, before the events are let go: what is newer came after the
  // recording (and, once read, says the CPU's stream is drained). A CPU
  // whose clock cannot be read has no end: its drain ends when it is quiet.
  void read_end() {
    for (auto& r : recorders_)
      if (auto now = read_clock_now(layout_.mount, r->cpu())) r->set_end(*now);
  }

  static std::int64_t realtime_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  Status run_the_command() {
    if (opts_.command.empty()) return {};
    auto child = run_command(opts_.command);
    if (!child) return std::move(child).error();
    child_ = *child;
    return {};
  }

  struct Totals {
    std::uint64_t events = 0, lost = 0, bytes = 0, skipped = 0, older = 0, newer = 0;
    std::string unread;  // the CPUs whose drain ended with records unread
  };
  Totals totals() const {
    Totals t;
    for (const auto& r : recorders_) {
      t.events += r->events();
      t.lost += r->lost();
      t.bytes += r->bytes();
      t.skipped += r->skipped();
      t.older += r->older();
      t.newer += r->newer();
      if (r->left_unread()) t.unread += fmt::format("{}{}", t.unread.empty() ? "" : ",", r->cpu());
    }
    return t;
  }

  // The recorders' first error (or the output's), once the threads are done,
  // the last packets written and the output made whole; an output whose
  // recording never began is abandoned.
  Status stop_recorders() {
    control_.phase = control_.failed ? RecordControl::kStop : RecordControl::kDrain;
    if (threads_) threads_->join();
    Status first;
    for (auto& r : recorders_)
      if (Status s = r->finish(); !s && first) first = std::move(s);
    if (!output_) return first;
    if (!threads_) {
      output_->abandon();
      return first;
    }
    if (Status s = output_->finish(); !s && first) first = std::move(s);
    return first;
  }

  // A command still running gets `sig` (unless `send` is false: it had it
  // already), and SIGKILL kCommandGrace later; it is reaped either way. The
  // signal that ended it, or 0 when it had ended already (or there is none).
  int end_command(int sig, bool send = true) {
    if (child_ <= 0) return 0;
    auto reaped = [this] {
      int st = 0;
      if (::waitpid(child_, &st, WNOHANG) != child_) return false;
      child_ = -1;
      child_status_ = st;
      return true;
    };
    if (reaped()) return 0;
    if (send) ::kill(child_, sig);
    const auto deadline = Clock::now() + kCommandGrace;
    while (Clock::now() < deadline) {
      if (reaped()) return sig;
      ::usleep(20 * 1000);
    }
    ::kill(child_, SIGKILL);
    int st = 0;
    while (::waitpid(child_, &st, 0) < 0 && errno == EINTR) {
    }
    child_ = -1;
    child_status_ = st;
    return SIGKILL;
  }

  const Options& opts_;
  MountLayout layout_;
  std::unique_ptr<RecordingOutput> output_;
  RecordControl control_;
  std::vector<std::unique_ptr<CpuRecorder>> recorders_;
  std::unique_ptr<ReaderThreads> threads_;
  std::unique_ptr<EventHolds> holds_;
  ClockOffset clock_offset_;
  pid_t child_ = -1;
  std::optional<int> child_status_;
  int signal_ = 0;
  bool progress_shown_ = false;
};

void Recording::wait_for_end() {
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

void Recording::print_summary() const {
  auto t = totals();
  std::uint64_t packets = 0;  // the writers' own count, read once their threads are done
  for (const auto& r : recorders_) packets += r->sink().packets();
  std::string extra;
  if (t.skipped) extra += fmt::format(", {} records of other events skipped", t.skipped);
  if (t.older) extra += fmt::format(", {} records from before the start skipped", t.older);
  if (t.newer) extra += fmt::format(", {} records from after the end skipped", t.newer);
  if (!t.unread.empty())
    extra += fmt::format(", records of CPU {} still unread at the drain's limit ({} s)", t.unread,
                         ReaderThreads::kDrainLimit.count());
  if (child_status_ && WIFEXITED(*child_status_) && WEXITSTATUS(*child_status_) != 0)
    extra += fmt::format(", {} exited with status {}", opts_.command[0], WEXITSTATUS(*child_status_));
  if (child_status_ && WIFSIGNALED(*child_status_))
    extra += fmt::format(", {} ended by signal {}", opts_.command[0], WTERMSIG(*child_status_));
  std::fprintf(stderr, "eventfs-record: %llu events, %llu lost, %s in %llu %s from %zu CPUs written to %s%s\n",
               static_cast<unsigned long long>(t.events), static_cast<unsigned long long>(t.lost),
               human_bytes(t.bytes).c_str(), static_cast<unsigned long long>(packets), output_->unit(),
               recorders_.size(), output_->path().c_str(), extra.c_str());
}

// Records as the options say: 0 when the recording ran to its end (-t, the
// command's end, or a signal) and was written whole; 1, after one line on
// stderr, when it could not start or stopped before its end (see
// eventfs-record(1), EXIT STATUS).
int record(const Options& opts) {
  Recording rec(opts);
  try {
    if (Status s = rec.start(); !s) {
      rec.abort();
      return report_failure(s.reason());
    }
    rec.wait_for_end();
    if (Status s = rec.finish(); !s) return report_failure(s.reason());
    rec.print_summary();
    return 0;
  } catch (const std::bad_alloc& e) {
    // The one exception that gets here; the holds end all the same.
    rec.abort();
    return report_failure(e.what());
  }
}

}  // namespace
}  // namespace eventfs::recorder

int main(int argc, char** argv) {
  using namespace eventfs::recorder;
  // The signals that end a recording are taken by the main thread only (in
  // sigtimedwait), so that the streams are drained and the last packets
  // written whatever stops it. (The events' holds end with the process,
  // whatever it dies of.)
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto opts = parse_options(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "eventfs-record: %s (see eventfs-record -h)\n", opts.error().message.c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  if (opts->version) {
    std::puts("eventfs-record " EVENTFS_VERSION);
    return 0;
  }
  return record(*opts);
}
