// The control-file load of the fault tests: threads and processes writing and
#include "support/fault_control_load.h"
#include "support/time_scale.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <random>
#include <sstream>

namespace eventfs_it::fault {

std::map<std::string, EventState> instance_events(const std::string& inst) {
  std::map<std::string, EventState> out;
  for (const auto& ev : tracefs_events(inst)) {
    const std::string d = inst + "/events/" + ev;
    EventState s;
    if (read_file(d + "/enable", s.enable) != 0) continue;  // ftrace/* have no controls
    s.filter = slurp(d + "/filter");
    s.triggers = as_set(trigger_lines(slurp(d + "/trigger")));
    out[ev] = std::move(s);
  }
  return out;
}

std::vector<std::string> instance_leftovers(const std::string& inst) {
  std::vector<std::string> out;
  for (const auto& [ev, s] : instance_events(inst)) {
    if (s.enable != "0\n") out.push_back(ev + "/enable: " + printable(s.enable));
    if (s.filter != "none\n") out.push_back(ev + "/filter: " + printable(s.filter));
    for (const auto& t : s.triggers) out.push_back(ev + "/trigger: " + t);
  }
  return out;
}

Env make_env(const std::string& mnt, const std::string& header) {
  Env e;
  e.mnt = mnt;
  e.header = header;
  e.slots = {
      {"sched_wakeup/filter",
       "sched/sched_wakeup",
       true,
       {"pid == 101", "pid != 202 && prio < 50", "prio > 10", "0",
        "pid != 303 && pid != 404 && pid != 505 && pid != 606 && pid != 707 && pid != 808 && prio < 140"}},
      {"raw/sched/sched_process_free/filter",
       "sched/sched_process_free",
       true,
       {"pid == 7", "prio > 120 || pid == 8", "0"}},
      {"sched_wakeup/enable", "sched/sched_wakeup", false, {"0", "1"}},
      {"raw/sched/sched_wakeup/enable", "sched/sched_wakeup", false, {"0", "1"}},
      {"irq_handler_entry/enable", "irq/irq_handler_entry", false, {"0", "1"}},
      {"raw/irq/irq_handler_exit/enable", "irq/irq_handler_exit", false, {"0", "1"}},
  };
  e.owners = {
      {"sched_switch/trigger", "enable_event:sched_migrate_task if prev_pid == -1", "!enable_event:sched_migrate_task",
       "sched/sched_switch", "enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1",
       "enable_event:sched_migrate_task:unlimited if prev_pid == -1", "sched/sched_migrate_task"},
      {"sched_switch/trigger", "traceoff:3 if prev_pid == -2", "!traceoff", "sched/sched_switch",
       "traceoff:count=3 if prev_pid == -2", "traceoff:count=3 if prev_pid == -2", ""},
      {"sched_switch/trigger", "stacktrace if prev_pid == -3", "!stacktrace", "sched/sched_switch",
       "stacktrace:unlimited if prev_pid == -3", "stacktrace:unlimited if prev_pid == -3", ""},
      {"raw/sched/sched_switch/trigger", "enable_event:irq:softirq_raise if prev_pid == -4",
       "!enable_event:irq:softirq_raise", "sched/sched_switch",
       "enable_event:irq:softirq_raise:unlimited if prev_pid == -4",
       "enable_event:irq:softirq_raise:unlimited if prev_pid == -4", "irq/softirq_raise"},
      {"sched_wakeup/trigger", "disable_event:cpu_idle if pid == -6", "!disable_event:cpu_idle", "sched/sched_wakeup",
       "disable_event:power:cpu_idle:unlimited if pid == -6", "disable_event:cpu_idle:unlimited if pid == -6",
       "power/cpu_idle"},
  };
  e.held = {"sched_wakeup/trigger",
            "enable_event:sched_process_exit if pid == -5",
            "",
            "sched/sched_wakeup",
            "enable_event:sched:sched_process_exit:unlimited if pid == -5",
            "enable_event:sched_process_exit:unlimited if pid == -5",
            "sched/sched_process_exit"};
  e.bad = {
      {"sched_wakeup/filter", "pid ==\n", EINVAL},
      {"sched_wakeup/filter", "no_such_field == 1\n", EINVAL},
      {"raw/sched/sched_process_free/filter", "pid == zzz\n", EINVAL},  // refused by the kernel itself
      {"sched_switch/trigger", "frobnicate\n", EINVAL},
      {"raw/sched/sched_switch/trigger", "frobnicate if prev_pid == 1\n", EINVAL},
      {"sched_wakeup/enable", "2\n", EINVAL},
      {"raw/sched/sched_wakeup/enable", "yes\n", EINVAL},
      // The held trigger again, with another filter.
      {"sched_wakeup/trigger", "enable_event:sched_process_exit\n", EEXIST},
      {"raw/sched/sched_wakeup/trigger", "enable_event:sched:sched_process_exit if pid == -9\n", EEXIST},
      // Globs whose last match is the held trigger's target: the earlier
      // matches go in first and must come out again (unfiltered, they fire
      // on the next sched_wakeup while they are in).
      {"sched_wakeup/trigger", "enable_event:sched_process_*\n", EEXIST},
      {"raw/sched/sched_wakeup/trigger", "enable_event:sched:sched_process_e*\n", EEXIST},
  };
  // The shared table: writes refused whatever the state (a 0-length write
  // need not reach the daemon).
  for (const auto& r : ::eventfs::testing::refused_writes())
    if (!r.data.empty()) e.bad.push_back({r.file, r.data, r.err});

  auto filter_texts = [&](int slot) {
    std::set<std::string> t{"none\n"};
    for (const auto& v : e.slots[slot].values)
      if (v != "0") t.insert(v + "\n");
    return t;
  };
  auto lines_of = [&](std::initializer_list<int> owners, bool kernel) {
    std::set<std::string> l;
    for (int o : owners) l.insert(kernel ? e.owners[o].kernel_line : e.owners[o].mount_line);
    return l;
  };
  std::set<std::string> wakeup_mount = lines_of({kOwnCpuIdle}, false);
  wakeup_mount.insert(e.held.mount_line);
  // While a refused glob is being undone, its first matches are in.
  wakeup_mount.insert("enable_event:sched_process_fork:unlimited");
  wakeup_mount.insert("enable_event:sched_process_exec:unlimited");
  std::set<std::string> wakeup_kernel = lines_of({kOwnCpuIdle}, true);
  wakeup_kernel.insert(e.held.kernel_line);
  wakeup_kernel.insert("enable_event:sched:sched_process_fork:unlimited");
  wakeup_kernel.insert("enable_event:sched:sched_process_exec:unlimited");
  e.files = {
      {"sched_switch/trigger",
       Kind::Trigger,
       {},
       lines_of({kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq}, false)},
      {"raw/sched/sched_switch/trigger",
       Kind::Trigger,
       {},
       lines_of({kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq}, true)},
      {"sched_wakeup/trigger", Kind::Trigger, {}, wakeup_mount},
      {"raw/sched/sched_wakeup/trigger", Kind::Trigger, {}, wakeup_kernel},
      {"raw/power/cpu_idle/trigger", Kind::Trigger, {}, {}},
      {"sched_wakeup/filter", Kind::Filter, filter_texts(kWakeupFilter), {}},
      {"raw/sched/sched_wakeup/filter", Kind::Filter, filter_texts(kWakeupFilter), {}},
      {"raw/sched/sched_process_free/filter", Kind::Filter, filter_texts(kFreeRawFilter), {}},
      {"sched_switch/filter", Kind::Filter, {"none\n"}, {}},
      {"sched_wakeup/enable", Kind::Enable, {}, {}},
      {"raw/sched/sched_wakeup/enable", Kind::Enable, {}, {}},
      {"irq_handler_entry/enable", Kind::Enable, {}, {}},
      {"raw/irq/irq_handler_exit/enable", Kind::Enable, {}, {}},
      {"sched_switch/enable", Kind::Enable, {}, {}},
      {"sched_migrate_task/enable", Kind::Enable, {}, {}},
      {"sched_process_fork/enable", Kind::Enable, {}, {}},
      {"cpu_idle/enable", Kind::Enable, {}, {}},
      {"error_log", Kind::ErrorLog, {}, {}},
  };
  return e;
}

int file_index(const Env& e, const std::string& rel) {
  for (std::size_t i = 0; i < e.files.size(); ++i)
    if (e.files[i].rel == rel) return static_cast<int>(i);
  return -1;
}

::testing::AssertionResult open_shared(Env& e) {
  for (const char* rel : {"sched_switch/trigger", "raw/sched/sched_wakeup/trigger", "sched_wakeup/filter",
                          "sched_wakeup/enable", "error_log"}) {
    int fd = ::open((e.mnt + "/" + rel).c_str(), O_RDONLY | O_CLOEXEC);  // forked workers keep it (no exec)
    if (fd < 0) return ::testing::AssertionFailure() << "open " << rel << ": " << std::strerror(errno);
    e.shared_fds.push_back(fd);
    e.shared_files.push_back(file_index(e, rel));
  }
  return ::testing::AssertionSuccess();
}

void close_shared(Env& e) {
  for (int fd : e.shared_fds) ::close(fd);
  e.shared_fds.clear();
  e.shared_files.clear();
}

bool error_log_ok(const std::string& t) {
  if (t.empty()) return true;
  if (t.back() != '\n') return false;
  auto lines = split_lines(t);
  if (lines.size() % 3 != 0) return false;
  for (std::size_t i = 0; i < lines.size(); i += 3) {
    const std::string &head = lines[i], &cmd = lines[i + 1], &caret = lines[i + 2];
    if (head.empty() || head[0] != '[' || head.find("] ") == std::string::npos ||
        head.find(": error: ") == std::string::npos)
      return false;
    if (cmd.rfind("  Command: ", 0) != 0) return false;
    if (caret.size() < 12 || caret.back() != '^' || caret.find_first_not_of(' ') != caret.size() - 1) return false;
  }
  return true;
}

bool whole_text_ok(const FileSpec& f, const std::string& header, const std::string& t) {
  switch (f.kind) {
    case Kind::Enable:
      return t == "0\n" || t == "1\n" || t == "0*\n" || t == "1*\n";
    case Kind::Filter:
      return f.texts.count(t) > 0;
    case Kind::Trigger: {
      if (t == header) return true;
      if (t.empty() || t.back() != '\n') return false;
      auto lines = split_lines(t);
      std::set<std::string> seen;
      for (const auto& l : lines)
        if (!f.lines.count(l) || !seen.insert(l).second) return false;
      return true;
    }
    case Kind::ErrorLog:
      return error_log_ok(t);
  }
  return false;
}

std::string check_read(const FileSpec& f, const std::string& header, const std::string& text, std::size_t offset) {
  bool ok = false;
  if (offset == 0) {
    ok = whole_text_ok(f, header, text);
  } else if (f.kind == Kind::Enable) {
    ok = text.empty();  // every text is shorter than 5 bytes
  } else if (f.kind == Kind::Filter) {
    for (const auto& t : f.texts) ok = ok || (t.size() > offset ? t.substr(offset) : "") == text;
  } else if (f.kind == Kind::Trigger) {
    // Some whole text's first bytes, and these, make a whole text.
    std::set<std::string> starts{header.substr(0, offset)};
    for (const auto& l : f.lines) starts.insert(l.substr(0, offset));
    for (const auto& s : starts) ok = ok || whole_text_ok(f, header, s + text);
  }
  if (ok) return "";
  return f.rel + " at offset " + std::to_string(offset) + ": [" + printable(text) + "]";
}

void run_worker(const Env& env, const Plan& plan, WorkerResult& r, std::int64_t deadline,
                const std::atomic<int>& stop) {
  std::mt19937 rng(plan.seed);
  std::vector<char> buf(65536);
  std::string text;
  for (int o : plan.owners) r.owner_present[o] = 0;
  struct Choice {
    int weight;
    int what;
  };
  std::vector<Choice> choices;
  if (!plan.owners.empty()) choices.push_back({4, 0});
  if (!plan.slots.empty()) choices.push_back({25, 1});
  if (plan.bad) choices.push_back({15, 2});
  if (plan.preads && !env.shared_fds.empty()) choices.push_back({30, 3});
  if (plan.reads) choices.push_back({26, 4});
  int total = 0;
  for (const auto& c : choices) total += c.weight;
  if (total == 0) return;
  auto path = [&](const std::string& rel) { return env.mnt + "/" + rel; };
  while (now_ns() < deadline && !stop.load()) {
    int pick = static_cast<int>(rng() % static_cast<unsigned>(total)), what = 0;
    for (const auto& c : choices) {
      if (pick < c.weight) {
        what = c.what;
        break;
      }
      pick -= c.weight;
    }
    if (what == 0) {  // a trigger of its own: add, remove, or add again (EEXIST)
      int o = plan.owners[rng() % plan.owners.size()];
      const Owner& ow = env.owners[o];
      bool present = r.owner_present[o] == 1;
      if (present && rng() % 3 == 0) {
        ++r.refusals;
        int e = write_once(path(ow.rel), ow.add + "\n");
        if (e == EEXIST) {
          ++r.refused;
          ++r.dups;
        } else {
          ++r.unexpected;
          r.note("'" + ow.add + "' to " + ow.rel + " while it is there: " + errno_desc(e) + ", not EEXIST");
        }
      } else {
        const std::string& data = present ? ow.remove : ow.add;
        ++r.writes;
        int e = write_once(path(ow.rel), data + "\n");
        if (e == 0) {
          ++r.accepted;
          r.owner_present[o] = present ? 0 : 1;
        } else {
          ++r.unexpected;
          r.note("'" + data + "' to " + ow.rel + ": " + errno_desc(e));
        }
      }
    } else if (what == 1) {       // a valid value to a slot
      if (r.nrecs >= kMaxRecs) {  // the candidates need every write: stop writing
        if (!r.recs_full) r.note("more valid writes than the records hold");
        r.recs_full = true;
        std::this_thread::sleep_for(1ms);
        continue;
      }
      int s = plan.slots[rng() % plan.slots.size()];
      const Slot& sl = env.slots[s];
      int v = static_cast<int>(rng() % sl.values.size());
      WriteRec rec{s, v, 0, now_ns(), 0};
      rec.err = write_once(path(sl.rel), sl.values[v] + "\n");
      rec.end = now_ns();
      r.recs[r.nrecs++] = rec;
      ++r.writes;
      if (rec.err == 0) {
        ++r.accepted;
      } else {
        ++r.unexpected;
        r.note("'" + sl.values[v] + "' to " + sl.rel + ": " + errno_desc(rec.err));
      }
    } else if (what == 2) {  // a write that must be refused
      const BadWrite& b = env.bad[rng() % env.bad.size()];
      ++r.refusals;
      int e = write_once(path(b.rel), b.data);
      if (e == b.err) {
        ++r.refused;
        if (e == EEXIST) ++r.dups;
      } else {
        ++r.unexpected;
        r.note("'" + printable(b.data) + "' to " + b.rel + ": " + errno_desc(e) + ", not " + errno_desc(b.err));
      }
    } else if (what == 3) {  // pread of a shared descriptor
      std::size_t k = rng() % env.shared_fds.size();
      const FileSpec& f = env.files[static_cast<std::size_t>(env.shared_files[k])];
      off_t off = f.kind == Kind::ErrorLog || rng() % 2 == 0 ? 0 : 5;
      ssize_t n = ::pread(env.shared_fds[k], buf.data(), buf.size(), off);
      ++r.preads;
      if (n < 0) {
        ++r.read_errors;
        r.note("pread " + f.rel + " at " + std::to_string(off) + ": " + errno_desc(errno));
      } else if (auto why = check_read(f, env.header, std::string(buf.data(), static_cast<std::size_t>(n)),
                                       static_cast<std::size_t>(off));
                 !why.empty()) {
        ++r.bad_texts;
        r.note("pread " + why);
      }
    } else {  // open, read to the end, close
      const FileSpec& f = env.files[rng() % env.files.size()];
      ++r.reads;
      if (int e = read_file(path(f.rel), text)) {
        ++r.read_errors;
        r.note("read " + f.rel + ": " + errno_desc(e));
      } else if (auto why = check_read(f, env.header, text, 0); !why.empty()) {
        ++r.bad_texts;
        r.note("read " + why);
      }
    }
  }
}

std::set<int> final_candidates(const std::vector<WriteRec>& accepted) {
  if (accepted.empty()) return {-1};
  std::int64_t latest_start = 0;
  for (const auto& r : accepted) latest_start = std::max(latest_start, r.start);
  std::set<int> out;
  for (const auto& r : accepted)
    if (r.end >= latest_start) out.insert(r.value);
  return out;
}

std::string read_header(const std::string& inst) { return slurp(inst + "/events/sched/sched_switch/trigger"); }

std::string missing_events() {
  for (const char* ev :
       {"sched/sched_switch", "sched/sched_wakeup", "sched/sched_process_free", "sched/sched_process_fork",
        "sched/sched_process_exec", "sched/sched_process_exit", "sched/sched_migrate_task", "irq/softirq_raise",
        "irq/irq_handler_entry", "irq/irq_handler_exit", "power/cpu_idle"})
    if (!exists(std::string(kLiveTracefs) + "/events/" + ev + "/trigger")) return ev;
  return "";
}

WorkerResult::WorkerResult() { std::fill(std::begin(owner_present), std::end(owner_present), -1); }

void WorkerResult::note(const std::string& p) {
  if (nproblems < kMaxProblems) {
    problem_at[nproblems] = now_ns();
    std::snprintf(problems[nproblems], kProblemLen, "%s", p.c_str());
  }
  ++nproblems;
}

SharedBoard::SharedBoard() {
  void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) b_ = new (p) Board();
}

SharedBoard::~SharedBoard() {
  if (!b_) return;
  b_->~Board();
  ::munmap(b_, sizeof(Board));
}

Workers::~Workers() {
  b_.stop = 1;
  b_.go = 1;
  for (std::size_t k = 0; k < pids_.size(); ++k)
    if (!reaped_[k]) {
      ::kill(pids_[k], SIGKILL);
      ::waitpid(pids_[k], nullptr, 0);
    }
  JoinAll();
}

int Workers::AddProcess(const Plan& plan) {
  if (n_ >= kMaxWorkers) return -1;
  int i = n_;
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child runs its worker and ends; it never returns into the test.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      std::int64_t limit = now_ns() + std::chrono::nanoseconds(scaled(20s)).count();
      while (!b_.go.load() && now_ns() < limit) ::usleep(1000);
      if (b_.go.load()) run_worker(env_, plan, b_.w[i], b_.deadline.load(), b_.stop);
      b_.w[i].done = 1;
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  if (pid < 0) return -1;
  ++n_;
  pids_.push_back(pid);
  reaped_.push_back(false);
  statuses_.push_back(0);
  return i;
}

int Workers::AddThread(const Plan& plan) {
  if (n_ >= kMaxWorkers) return -1;
  int i = n_++;
  threads_.emplace_back([this, plan, i] {
    while (!b_.go.load()) std::this_thread::sleep_for(1ms);
    run_worker(env_, plan, b_.w[i], b_.deadline.load(), b_.stop);
    b_.w[i].done = 1;
  });
  return i;
}

void Workers::Go(std::chrono::milliseconds duration) {
  b_.deadline = now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
  b_.go = 1;
}

std::vector<std::string> Workers::Wait(std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + scaled(limit);
  std::vector<std::string> stuck;
  for (std::size_t k = 0; k < pids_.size(); ++k) {
    if (reaped_[k]) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (wait_exit(pids_[k], std::max(left, 0ms), statuses_[k]))
      reaped_[k] = true;
    else
      stuck.push_back("worker process " + std::to_string(pids_[k]));
  }
  for (int i = 0; i < n_; ++i)
    while (!b_.w[i].done.load() && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
  bool threads_done = true;
  for (int i = 0; i < n_; ++i)
    if (!b_.w[i].done.load()) threads_done = false;
  if (threads_done)
    JoinAll();
  else if (stuck.empty())
    stuck.push_back("worker threads");
  return stuck;
}

std::vector<std::string> Workers::BadExits() const {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < pids_.size(); ++k)
    if (reaped_[k] && !(WIFEXITED(statuses_[k]) && WEXITSTATUS(statuses_[k]) == 0))
      out.push_back("worker process " + std::to_string(pids_[k]) + ": " + describe_status(statuses_[k]));
  return out;
}

void Workers::JoinAll() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Totals::add(const WorkerResult& r, int i, std::int64_t before_ns) {
  writes += r.writes;
  accepted += r.accepted;
  refusals += r.refusals;
  refused += r.refused;
  dups += r.dups;
  unexpected += r.unexpected;
  reads += r.reads;
  preads += r.preads;
  read_errors += r.read_errors;
  bad_texts += r.bad_texts;
  for (int k = 0; k < std::min(r.nproblems, kMaxProblems); ++k)
    if (r.problem_at[k] < before_ns) problems.push_back("worker " + std::to_string(i) + ": " + r.problems[k]);
  if (r.nproblems > kMaxProblems && before_ns == INT64_MAX)
    problems.push_back("worker " + std::to_string(i) + ": ... " + std::to_string(r.nproblems - kMaxProblems) +
                       " more");
}

std::string Totals::line() const {
  std::ostringstream o;
  o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
    << refusals << ": refused as expected " << refused << ", of them duplicate or glob "
    << "triggers (EEXIST) " << dups << "); unexpected results " << unexpected << "; reads " << reads << ", preads "
    << preads << " (failed " << read_errors << ", malformed " << bad_texts << ")";
  return o.str();
}

std::string Totals::signal_line() const {
  std::ostringstream o;
  o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
    << refusals << ": refused as expected " << refused << ", of them EEXIST " << dups << "); other results "
    << unexpected << " (calls after the signal fail); reads " << reads << ", preads " << preads;
  return o.str();
}

}  // namespace eventfs_it::fault
