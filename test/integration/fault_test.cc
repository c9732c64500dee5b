// Faults and concurrency on the real kernel (needs root, FUSE and a live
// tracefs; every mount has a tracefs instance of its own):
//
//  1. Threads and child processes at the control files at once: valid writes
//     (some files with several writers), refused ones (bad filters, unknown
//     commands, duplicate and glob triggers), reads, and preads of shared
//     descriptors at offsets 0 and 5. Afterwards the daemon's instance must
//     hold what the accepted writes imply and nothing else, and every read
//     must have been a whole, well-formed text.
//  2. Threads and processes preading one shared descriptor of a filter that
//     keeps changing: every read is a whole text or the tail of one.
//  3. A slow trigger write must not hold up the control files of other events.
//  4. Stream readers (cat of trace_pipe and per_cpu/cpuN/trace_pipe_raw)
//     SIGKILLed mid-read while markers are written: the daemon serves on.
//  5. SIGTERM of the daemon at seeded random points under that load: every
//     reader gets end of file, the daemon exits 0 and its instance is gone.
//  6. SIGKILL of the daemon at seeded random points under that load: the
//     readers return, and the next daemon with the same instance name
//     reclaims the instance and finds it clean.
//
// Each test checks that the top-level instance is byte for byte as before and
// prints its operation counts ("[fault]" lines, and test properties).
// EVENTFS_FAULT_SEED=N repeats a run's random choices; the seed is printed.
#include <sys/mman.h>
#include <time.h>

#include <iostream>
#include <new>
#include <random>
#include <string_view>

#include "../common/refused_writes.h"
#include "stream_helpers.h"

namespace eventfs_it {
namespace {

using namespace stream;

// ---------------------------------------------------------------------------
// Small things.

// CLOCK_MONOTONIC in ns: one clock for the test, its threads and its children.
std::int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

long ms_of(std::int64_t ns) { return static_cast<long>(ns / 1000000); }

// "EIO (Input/output error)", "accepted" for 0, "short write" for -1.
std::string errno_desc(int e) {
  if (e == 0) return "accepted";
  if (e < 0) return "short write";
  const char* name = ::strerrorname_np(e);
  return std::string(name ? name : "?") + " (" + std::strerror(e) + ")";
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += static_cast<char>(c);
  }
  return out.size() > 160 ? out.substr(0, 160) + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

// Trigger lines of a trigger file (the kernel's "# ..." header is not one).
std::vector<std::string> trigger_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : split_lines(text))
    if (!l.empty() && l[0] != '#') out.push_back(l);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::string owner_record(const std::string& name) { return "/run/eventfs/" + name + ".owner"; }

unsigned fault_seed() {
  static const unsigned seed = [] {
    if (const char* s = std::getenv("EVENTFS_FAULT_SEED"); s && *s)
      return static_cast<unsigned>(std::strtoul(s, nullptr, 10));
    return static_cast<unsigned>(std::random_device{}());
  }();
  return seed;
}

// ---------------------------------------------------------------------------
// The top-level instance: every event's enable, filter and trigger, each
// system's enable and filter, and the global switches.

std::map<std::string, std::string> top_level_state() {
  const std::string root = kLiveTracefs;
  std::map<std::string, std::string> s;
  auto take = [&](const std::string& rel) {
    std::string text;
    int e = read_file(root + "/" + rel, text);
    if (e == 0)
      s[rel] = text;
    else if (e != ENOENT)
      s[rel] = std::string("<") + std::strerror(e) + ">";
  };
  for (const char* f : {"tracing_on", "current_tracer", "set_event", "events/enable"}) take(f);
  for (const auto& sys : list_dir(root + "/events", true)) {
    const std::string sd = "events/" + sys;
    take(sd + "/enable");
    take(sd + "/filter");
    for (const auto& ev : list_dir(root + "/" + sd, true))
      for (const char* f : {"enable", "filter", "trigger"}) take(sd + "/" + ev + "/" + f);
  }
  return s;
}

std::string state_diff(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& after) {
  std::set<std::string> keys;
  for (const auto& [k, v] : before) keys.insert(k);
  for (const auto& [k, v] : after) keys.insert(k);
  std::string out;
  int n = 0;
  for (const auto& k : keys) {
    auto b = before.find(k), a = after.find(k);
    std::string bv = b == before.end() ? "<absent>" : b->second, av = a == after.end() ? "<absent>" : a->second;
    if (bv == av) continue;
    if (n++ < 20) out += "  " + k + ": [" + printable(bv) + "] -> [" + printable(av) + "]\n";
  }
  if (n > 20) out += "  ... " + std::to_string(n - 20) + " more\n";
  return out;
}

// Every test: the seed printed, and the top-level instance as it was.
class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EVENTFS_REQUIRE_LIVE_TRACEFS();
    seed_ = fault_seed();
    std::cout << "[fault] seed " << seed_ << " (EVENTFS_FAULT_SEED=" << seed_ << " repeats this run)" << std::endl;
    RecordProperty("seed", std::to_string(seed_));
    top_ = top_level_state();
  }
  void TearDown() override {
    if (top_.empty()) return;  // skipped
    auto now = top_level_state();
    EXPECT_TRUE(now == top_) << "the top-level instance changed:\n" << state_diff(top_, now);
  }
  // A count for the XML report (the log has it in a "[fault]" line).
  void Count(const std::string& what, long n) { RecordProperty(what, std::to_string(n)); }

  unsigned seed_ = 0;

 private:
  std::map<std::string, std::string> top_;
};

// ---------------------------------------------------------------------------
// The daemon's instance, event by event.

struct EventState {
  std::string enable, filter;
  std::set<std::string> triggers;
};

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

// What is left in an instance: anything enabled, filtered or triggered.
std::vector<std::string> instance_leftovers(const std::string& inst) {
  std::vector<std::string> out;
  for (const auto& [ev, s] : instance_events(inst)) {
    if (s.enable != "0\n") out.push_back(ev + "/enable: " + printable(s.enable));
    if (s.filter != "none\n") out.push_back(ev + "/filter: " + printable(s.filter));
    for (const auto& t : s.triggers) out.push_back(ev + "/trigger: " + t);
  }
  return out;
}

// ---------------------------------------------------------------------------
// The control-file model: what is written where, what each file may show.

enum class Kind { Enable, Filter, Trigger, ErrorLog };

struct FileSpec {
  std::string rel;
  Kind kind;
  std::set<std::string> texts;  // Filter: every text it may show
  std::set<std::string> lines;  // Trigger: every line it may show
};

// A control file that one or more workers write valid values to; the last
// accepted write decides what the instance holds.
struct Slot {
  std::string rel;
  std::string kdir;                 // <system>/<event> in the instance
  bool filter;                      // else enable
  std::vector<std::string> values;  // "0" clears a filter
};

// A trigger that one worker alone adds and removes (and adds again while it
// is there, which the kernel refuses with EEXIST). Its filter never matches,
// so it never fires.
struct Owner {
  std::string rel, add, remove;
  std::string kdir, kernel_line, mount_line;  // mount_line: as the stable file of kdir's event shows it
  std::string target;                         // <system>/<event> it arms, or ""
};

struct BadWrite {
  std::string rel, data;
  int err;
};

struct Plan {
  std::vector<int> slots, owners;
  bool bad = false, preads = false, reads = true;
  unsigned seed = 0;
};

struct Env {
  std::string mnt;
  std::string header;  // the kernel's trigger file without triggers
  std::vector<FileSpec> files;
  std::vector<Slot> slots;
  std::vector<Owner> owners;
  std::vector<BadWrite> bad;
  Owner held;                     // added before the workers start, never removed
  std::vector<int> shared_fds;    // one open file each, shared by every worker (children inherit them)
  std::vector<int> shared_files;  // their FileSpec
};

enum SlotId { kWakeupFilter, kFreeRawFilter, kWakeupEnable, kWakeupRawEnable, kIrqEntryEnable, kIrqExitRawEnable };
enum OwnerId { kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq, kOwnCpuIdle };

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

// Opens the shared descriptors (before any worker forks).
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

// "" if `text`, read at `offset` (0 or 5), is what `f` may show there; else why not.
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

// ---------------------------------------------------------------------------
// Workers: threads and child processes running a Plan. Their results live
// in memory shared across fork(), so that both kinds report the same way.

constexpr int kMaxRecs = 32768, kMaxOwners = 8, kMaxProblems = 8, kProblemLen = 400, kMaxWorkers = 16;

struct WriteRec {
  std::int32_t slot, value, err;
  std::int64_t start, end;
};

struct WorkerResult {
  WorkerResult() { std::fill(std::begin(owner_present), std::end(owner_present), -1); }
  std::atomic<int> done{0};
  long writes = 0, accepted = 0;             // valid writes
  long refusals = 0, refused = 0, dups = 0;  // writes that must be refused; refused as expected; of them EEXIST
  long unexpected = 0;                       // any write whose result was not the expected one
  long reads = 0, preads = 0, read_errors = 0, bad_texts = 0;
  int nrecs = 0;
  bool recs_full = false;
  WriteRec recs[kMaxRecs];
  signed char owner_present[kMaxOwners];  // -1: not this worker's
  int nproblems = 0;
  std::int64_t problem_at[kMaxProblems];
  char problems[kMaxProblems][kProblemLen];

  void note(const std::string& p) {
    if (nproblems < kMaxProblems) {
      problem_at[nproblems] = now_ns();
      std::snprintf(problems[nproblems], kProblemLen, "%s", p.c_str());
    }
    ++nproblems;
  }
};

struct Board {
  std::atomic<int> go{0}, stop{0};
  std::atomic<std::int64_t> deadline{0};
  WorkerResult w[kMaxWorkers];
};

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

// Memory shared with the forked workers.
class SharedBoard {
 public:
  SharedBoard() {
    void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) b_ = new (p) Board();
  }
  ~SharedBoard() {
    if (!b_) return;
    b_->~Board();
    ::munmap(b_, sizeof(Board));
  }
  SharedBoard(const SharedBoard&) = delete;
  SharedBoard& operator=(const SharedBoard&) = delete;
  bool ok() const { return b_ != nullptr; }
  Board& operator*() { return *b_; }
  Board* operator->() { return b_; }

 private:
  Board* b_ = nullptr;
};

// Worker threads and processes over one Env: processes are forked first
// (before the test starts threads of its own), all wait for Go().
class Workers {
 public:
  Workers(const Env& env, Board& board) : env_(env), b_(board) {}
  ~Workers() {
    b_.stop = 1;
    b_.go = 1;
    for (std::size_t k = 0; k < pids_.size(); ++k)
      if (!reaped_[k]) {
        ::kill(pids_[k], SIGKILL);
        ::waitpid(pids_[k], nullptr, 0);
      }
    JoinAll();
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Returns the worker's index in the board, or -1.
  int AddProcess(const Plan& plan) {
    if (n_ >= kMaxWorkers) return -1;
    int i = n_;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      // The child runs its worker and ends; it never returns into the test.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      try {
        std::int64_t limit = now_ns() + 20'000'000'000;
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

  int AddThread(const Plan& plan) {
    if (n_ >= kMaxWorkers) return -1;
    int i = n_++;
    threads_.emplace_back([this, plan, i] {
      while (!b_.go.load()) std::this_thread::sleep_for(1ms);
      run_worker(env_, plan, b_.w[i], b_.deadline.load(), b_.stop);
      b_.w[i].done = 1;
    });
    return i;
  }

  void Go(std::chrono::milliseconds duration) {
    b_.deadline = now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
    b_.go = 1;
  }
  void Stop() { b_.stop = 1; }

  // Waits (bounded) for every worker, reaping the processes; names the ones
  // still running. Threads are joined once all are done.
  std::vector<std::string> Wait(std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
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
  // Processes that did not end normally.
  std::vector<std::string> BadExits() const {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < pids_.size(); ++k)
      if (reaped_[k] && !(WIFEXITED(statuses_[k]) && WEXITSTATUS(statuses_[k]) == 0))
        out.push_back("worker process " + std::to_string(pids_[k]) + ": " + describe_status(statuses_[k]));
    return out;
  }
  void JoinAll() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  int size() const { return n_; }
  const WorkerResult& result(int i) const { return b_.w[i]; }

 private:
  const Env& env_;
  Board& b_;
  int n_ = 0;
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  std::vector<int> statuses_;
  std::vector<std::thread> threads_;
};

struct Totals {
  long writes = 0, accepted = 0, refusals = 0, refused = 0, dups = 0, unexpected = 0, reads = 0, preads = 0,
       read_errors = 0, bad_texts = 0;
  std::vector<std::string> problems;  // "worker i: ..."
  void add(const WorkerResult& r, int i, std::int64_t before_ns = INT64_MAX) {
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
  std::string line() const {
    std::ostringstream o;
    o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
      << refusals << ": refused as expected " << refused << ", of them duplicate or glob "
      << "triggers (EEXIST) " << dups << "); unexpected results " << unexpected << "; reads " << reads << ", preads "
      << preads << " (failed " << read_errors << ", malformed " << bad_texts << ")";
    return o.str();
  }
  // The same for a run that ends with the daemon stopped: calls after the
  // signal fail, and count among the other results.
  std::string signal_line() const {
    std::ostringstream o;
    o << "writes tried " << writes + refusals << " (valid " << writes << ": accepted " << accepted << "; to be refused "
      << refusals << ": refused as expected " << refused << ", of them EEXIST " << dups << "); other results "
      << unexpected << " (calls after the signal fail); reads " << reads << ", preads " << preads;
    return o.str();
  }
};

// The values a slot may end with: those of accepted writes that no other
// accepted write began after (writes that overlap the last ones may land in
// either order). -1 stands for "never written".
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

// Everything the Env names exists on this kernel.
std::string missing_events() {
  for (const char* ev :
       {"sched/sched_switch", "sched/sched_wakeup", "sched/sched_process_free", "sched/sched_process_fork",
        "sched/sched_process_exec", "sched/sched_process_exit", "sched/sched_migrate_task", "irq/softirq_raise",
        "irq/irq_handler_entry", "irq/irq_handler_exit", "power/cpu_idle"})
    if (!exists(std::string(kLiveTracefs) + "/events/" + ev + "/trigger")) return ev;
  return "";
}

// ---------------------------------------------------------------------------
// 1. Many writers and readers at once.

class FaultControl : public FaultTest {};

TEST_F(FaultControl, ThreadsAndProcessesAtOnceLeaveTheInstanceAsTheAcceptedWritesSay) {
  if (auto ev = missing_events(); !ev.empty()) GTEST_SKIP() << ev << " is not available on this kernel";
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  const std::string header = read_header(inst);
  ASSERT_EQ(header.rfind("# Available triggers:\n", 0), 0u) << header;
  Env env = make_env(m.path(), header);
  ASSERT_EQ(write_once(m / env.held.rel, env.held.add + "\n"), 0) << slurp(m / "error_log");
  ASSERT_TRUE(open_shared(env));
  SharedBoard board;
  ASSERT_TRUE(board.ok());

  constexpr auto kDuration = 3000ms;
  std::vector<Plan> procs = {
      {{kWakeupFilter, kWakeupEnable}, {kOwnStacktrace}, true, true, true, 0},
      {{kFreeRawFilter, kIrqExitRawEnable, kWakeupEnable}, {}, true, true, true, 0},
      {{}, {}, false, true, true, 0},
  };
  std::vector<Plan> threads = {
      {{kWakeupFilter}, {kOwnMigrate}, true, false, true, 0},
      {{kWakeupEnable}, {kOwnTraceoff}, false, false, true, 0},
      {{kWakeupRawEnable, kFreeRawFilter}, {kOwnRawSoftirq}, false, false, true, 0},
      {{kIrqEntryEnable}, {kOwnCpuIdle}, true, false, true, 0},
      {{}, {}, true, true, true, 0},
      {{}, {}, false, true, false, 0},
      {{}, {}, false, true, false, 0},
      {{}, {}, false, false, true, 0},
  };
  unsigned k = 0;
  Workers workers(env, *board);
  for (auto& p : procs) {
    p.seed = seed_ * 7919u + ++k;
    ASSERT_GE(workers.AddProcess(p), 0) << "fork: " << std::strerror(errno);
  }
  for (auto& p : threads) {
    p.seed = seed_ * 7919u + ++k;
    workers.AddThread(p);
  }
  workers.Go(kDuration);
  auto stuck = workers.Wait(kDuration + 15s);
  if (!stuck.empty()) {
    ADD_FAILURE() << "workers still in a call to the mount 15 s after the end: " << join(stuck, ", ")
                  << "; the daemon is killed to free them";
    ::kill(m.pid(), SIGKILL);
    force_unmount(m.path());
    workers.Wait(10s);
    workers.JoinAll();
    return;
  }
  close_shared(env);

  Totals tot;
  for (int i = 0; i < workers.size(); ++i) tot.add(workers.result(i), i);
  std::cout << "[fault] control: " << threads.size() << " threads and " << procs.size() << " processes for "
            << kDuration.count() << " ms: " << tot.line() << std::endl;
  Count("writes_tried", tot.writes + tot.refusals);
  Count("writes_accepted", tot.accepted);
  Count("writes_refused", tot.refused);
  Count("writes_refused_eexist", tot.dups);
  Count("unexpected_results", tot.unexpected);
  Count("reads", tot.reads);
  Count("preads", tot.preads);
  EXPECT_TRUE(workers.BadExits().empty()) << join(workers.BadExits());
  EXPECT_TRUE(tot.problems.empty()) << tot.problems.size() << " problems:\n" << join(tot.problems);
  EXPECT_EQ(tot.unexpected, 0);
  EXPECT_EQ(tot.read_errors, 0);
  EXPECT_EQ(tot.bad_texts, 0);
  // The run did what it is meant to (anything less says nothing).
  EXPECT_GT(tot.accepted, 20) << tot.line();
  EXPECT_GT(tot.refused, 20) << tot.line();
  EXPECT_GT(tot.dups, 2) << tot.line();
  EXPECT_GT(tot.reads, 100) << tot.line();
  EXPECT_GT(tot.preads, 100) << tot.line();

  ASSERT_TRUE(process_alive(m.pid())) << "the daemon died; stderr: " << m.Stderr();
  ASSERT_TRUE(mounted_at(m.path()));

  // What the instance must hold: per slot the last accepted value, per
  // owner its trigger iff its last accepted write added it.
  std::vector<std::vector<WriteRec>> accepted(env.slots.size());
  std::vector<bool> present(env.owners.size(), false);
  for (int i = 0; i < workers.size(); ++i) {
    const WorkerResult& r = workers.result(i);
    for (int j = 0; j < r.nrecs; ++j)
      if (r.recs[j].err == 0) accepted[static_cast<std::size_t>(r.recs[j].slot)].push_back(r.recs[j]);
    for (std::size_t o = 0; o < env.owners.size(); ++o)
      if (r.owner_present[o] == 1) present[o] = true;
  }
  std::map<std::string, std::set<std::string>> triggers;  // kdir -> kernel lines
  std::set<std::string> armed;                            // kdirs the kernel shows with '*'
  auto hold = [&](const Owner& o) {
    triggers[o.kdir].insert(o.kernel_line);
    armed.insert(o.kdir);  // an event with a trigger runs in soft mode
    if (!o.target.empty()) armed.insert(o.target);
  };
  hold(env.held);
  for (std::size_t o = 0; o < env.owners.size(); ++o)
    if (present[o]) hold(env.owners[o]);
  // The 0s and 1s an enable slot may end with.
  auto enable_candidates = [&](std::size_t s) {
    std::set<int> on;
    for (int v : final_candidates(accepted[s]))
      on.insert(v < 0 ? 0 : std::stoi(env.slots[s].values[static_cast<std::size_t>(v)]));
    return on;
  };
  std::map<std::string, std::set<std::string>> filters;       // kdir -> texts it may end with
  std::map<std::string, std::vector<std::set<int>>> enables;  // kdir -> candidates of each slot
  for (std::size_t s = 0; s < env.slots.size(); ++s) {
    const Slot& sl = env.slots[s];
    if (sl.filter) {
      for (int v : final_candidates(accepted[s]))
        filters[sl.kdir].insert(v < 0 || sl.values[static_cast<std::size_t>(v)] == "0"
                                    ? "none\n"
                                    : sl.values[static_cast<std::size_t>(v)] + "\n");
    } else {
      enables[sl.kdir].push_back(enable_candidates(s));
    }
  }

  auto state = instance_events(inst);
  ASSERT_GT(state.size(), 100u);
  std::vector<std::string> wrong;
  for (const auto& kd : {"sched/sched_switch", "sched/sched_wakeup", "sched/sched_process_free"})
    if (!state.count(kd)) wrong.push_back(std::string(kd) + ": not in the instance");
  for (const auto& [ev, s] : state) {
    bool may_on = false, may_off = true;
    for (const auto& c : enables[ev]) {
      may_on = may_on || c.count(1);
      may_off = may_off && c.count(0);
    }
    const char on = s.enable.empty() ? '?' : s.enable[0];
    const bool star = s.enable.find('*') != std::string::npos;
    if (on == '1' && !may_on)
      wrong.push_back(ev + "/enable is [" + printable(s.enable) + "]: no accepted write left it enabled");
    else if (on == '0' && !may_off)
      wrong.push_back(ev + "/enable is [" + printable(s.enable) + "]: the last accepted writes enabled it");
    else if (on != '0' && on != '1')
      wrong.push_back(ev + "/enable is [" + printable(s.enable) + "]");
    if (star != (armed.count(ev) > 0))
      wrong.push_back(ev + "/enable is [" + printable(s.enable) + "]: " +
                      (star ? "soft mode with no trigger on or at it" : "a trigger on or at it, but no soft mode"));
    std::set<std::string> fl = filters.count(ev) ? filters[ev] : std::set<std::string>{"none\n"};
    if (!fl.count(s.filter)) {
      std::string allowed;
      for (const auto& f : fl) allowed += " [" + printable(f) + "]";
      wrong.push_back(ev + "/filter is [" + printable(s.filter) + "], not one of" + allowed);
    }
    const auto& want = triggers[ev];
    if (s.triggers != want) {
      std::vector<std::string> extra, missing;
      for (const auto& t : s.triggers)
        if (!want.count(t)) extra.push_back(t);
      for (const auto& t : want)
        if (!s.triggers.count(t)) missing.push_back(t);
      wrong.push_back(ev + "/trigger: unexpected {" + join(extra, "; ") + "}, missing {" + join(missing, "; ") + "}");
    }
  }
  EXPECT_TRUE(wrong.empty()) << "the instance differs from what the accepted writes imply:\n"
                             << head_lines(join(wrong), 40);

  // The mount shows the same, in its own names.
  std::set<std::string> switch_mount;
  for (int o : {kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq})
    if (present[static_cast<std::size_t>(o)]) switch_mount.insert(env.owners[static_cast<std::size_t>(o)].mount_line);
  EXPECT_EQ(as_set(trigger_lines(slurp(m / "sched_switch/trigger"))), switch_mount);
  EXPECT_EQ(slurp(m / "raw/sched/sched_switch/trigger"), slurp(inst + "/events/sched/sched_switch/trigger"));
  std::set<std::string> wakeup_mount{env.held.mount_line};
  if (present[kOwnCpuIdle]) wakeup_mount.insert(env.owners[kOwnCpuIdle].mount_line);
  EXPECT_EQ(as_set(trigger_lines(slurp(m / "sched_wakeup/trigger"))), wakeup_mount);
  EXPECT_EQ(slurp(m / "sched_wakeup/filter"), slurp(inst + "/events/sched/sched_wakeup/filter"));
  {
    std::string got = slurp(m / "irq_handler_entry/enable");
    auto c = enable_candidates(kIrqEntryEnable);
    bool ok = (got == "1\n" && c.count(1)) || (got == "0\n" && c.count(0));
    EXPECT_TRUE(ok) << "irq_handler_entry/enable reads [" << printable(got) << "]";
  }
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);

  m.Stop();
  EXPECT_FALSE(exists(inst)) << "the instance outlived the daemon";
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 2. Many readers of one open file (preads at offsets 0 and 5, from threads
// and processes sharing the descriptor) while its text keeps changing, and
// of one whose text is long: each read is one whole text, or the tail of one.
TEST_F(FaultControl, ThreadsAndProcessesPreadingOneSharedDescriptorGetWholeTexts) {
  if (auto ev = missing_events(); !ev.empty()) GTEST_SKIP() << ev << " is not available on this kernel";
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  Env env = make_env(m.path(), read_header(inst));
  // Four triggers: a text of four lines.
  for (int o : {kOwnMigrate, kOwnTraceoff, kOwnStacktrace, kOwnRawSoftirq}) {
    const Owner& ow = env.owners[static_cast<std::size_t>(o)];
    ASSERT_EQ(write_once(m / ow.rel, ow.add + "\n"), 0) << slurp(m / "error_log");
  }
  const std::string filter = env.slots[kWakeupFilter].rel;
  for (const std::string& rel : {filter, std::string("sched_switch/trigger")}) {
    int fd = ::open((m / rel).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    env.shared_fds.push_back(fd);
    env.shared_files.push_back(file_index(env, rel));
  }
  SharedBoard board;
  ASSERT_TRUE(board.ok());
  constexpr auto kDuration = 3000ms;
  unsigned k = 0;
  Workers workers(env, *board);
  for (int i = 0; i < 2; ++i) ASSERT_GE(workers.AddProcess({{}, {}, false, true, false, seed_ + ++k}), 0);
  const int writer = workers.AddThread({{kWakeupFilter}, {}, false, false, false, seed_ + ++k});
  for (int i = 0; i < 4; ++i) workers.AddThread({{}, {}, false, true, false, seed_ + ++k});
  workers.Go(kDuration);
  auto stuck = workers.Wait(kDuration + 15s);
  if (!stuck.empty()) {
    ADD_FAILURE() << "workers still in a call to the mount 15 s after the end: " << join(stuck, ", ");
    ::kill(m.pid(), SIGKILL);
    force_unmount(m.path());
    workers.Wait(10s);
    workers.JoinAll();
    close_shared(env);
    return;
  }
  close_shared(env);
  Totals tot;
  for (int i = 0; i < workers.size(); ++i) tot.add(workers.result(i), i);
  std::cout << "[fault] shared descriptors of " << filter << " and sched_switch/trigger: 4 threads and 2 processes "
            << "preading, 1 thread writing the filter, for " << kDuration.count() << " ms: " << tot.line() << std::endl;
  Count("preads", tot.preads);
  Count("writes_accepted", tot.accepted);
  EXPECT_TRUE(workers.BadExits().empty()) << join(workers.BadExits());
  EXPECT_TRUE(tot.problems.empty()) << tot.problems.size() << " problems:\n" << join(tot.problems);
  EXPECT_EQ(tot.read_errors + tot.bad_texts + tot.unexpected, 0);
  EXPECT_GT(tot.preads, 1000) << tot.line();
  EXPECT_GT(tot.accepted, 10) << tot.line();
  // One writer: its last accepted value is the filter.
  const WorkerResult& w = workers.result(writer);
  std::string last = "none\n";
  for (int j = 0; j < w.nrecs; ++j)
    if (w.recs[j].err == 0) {
      const std::string& v = env.slots[kWakeupFilter].values[static_cast<std::size_t>(w.recs[j].value)];
      last = v == "0" ? "none\n" : v + "\n";
    }
  EXPECT_EQ(slurp(inst + "/events/sched/sched_wakeup/filter"), last);
  EXPECT_EQ(slurp(m / filter), last);
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 3. A slow write holds up its own file, not the others.

TEST_F(FaultControl, ASlowTriggerWriteDoesNotHoldUpTheControlFilesOfOtherEvents) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  auto blocks = list_dir(inst + "/events/block", true);
  ASSERT_GE(blocks.size(), 8u);
  // One kernel trigger per block event; removing each waits for the kernel
  // (an RCU grace period or so), so removing them all takes a while.
  ASSERT_EQ(write_once(m / "raw/sched/sched_switch/trigger", "enable_event:block:*\n"), 0) << slurp(m / "error_log");
  ASSERT_EQ(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")).size(), blocks.size());

  struct Read {
    std::int64_t start, end;
    int err;
    std::string rel;
  };
  const std::vector<std::string> others = {"irq_handler_entry/enable", "softirq_entry/filter",
                                           "raw/irq/softirq_raise/trigger", "sched_wakeup/enable"};
  std::vector<Read> reads;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    std::string text;
    for (std::size_t i = 0; !stop; ++i) {
      const std::string& rel = others[i % others.size()];
      Read r{now_ns(), 0, 0, rel};
      r.err = read_file(m / rel, text);
      r.end = now_ns();
      reads.push_back(r);
    }
  });
  std::this_thread::sleep_for(100ms);
  const std::int64_t s0 = now_ns();
  int e = write_once(m / "raw/sched/sched_switch/trigger", "!enable_event:block:*\n");
  const std::int64_t s1 = now_ns();
  std::this_thread::sleep_for(100ms);
  stop = true;
  reader.join();
  ASSERT_EQ(e, 0) << errno_desc(e) << "; " << slurp(m / "error_log");
  EXPECT_TRUE(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")).empty());

  const long slow_ms = ms_of(s1 - s0);
  long during = 0, worst_ms = 0, errors = 0;
  std::string worst;
  for (const auto& r : reads) {
    if (r.err) ++errors;
    if (r.end < s0 || r.start > s1) continue;
    ++during;
    if (ms_of(r.end - r.start) > worst_ms) {
      worst_ms = ms_of(r.end - r.start);
      worst = r.rel;
    }
  }
  std::cout << "[fault] slow write: removing " << blocks.size() << " kernel triggers took " << slow_ms
            << " ms; reads of other events' control files meanwhile: " << during << ", the slowest " << worst_ms
            << " ms (" << worst << "); reads in all " << reads.size() << std::endl;
  Count("slow_write_ms", slow_ms);
  Count("reads_during", during);
  Count("slowest_read_ms", worst_ms);
  EXPECT_EQ(errors, 0);
  if (slow_ms < 300)
    GTEST_SKIP() << "the kernel removed " << blocks.size() << " triggers in " << slow_ms
                 << " ms: too fast to tell one write from all of them";
  // The kernel itself holds other events' files for one trigger removal at
  // most (its event_mutex), a small part of the whole write.
  EXPECT_LT(worst_ms, slow_ms / 3) << "a read of " << worst << " waited " << worst_ms << " ms while a write to "
                                   << "raw/sched/sched_switch/trigger took " << slow_ms << " ms (" << during
                                   << " reads of other events' control files during it)";
  m.Stop();
  EXPECT_FALSE(exists(inst));
}

// ---------------------------------------------------------------------------
// trace_marker writes from a thread of their own.

class MarkerWriter {
 public:
  // Markers m-<n> for n = first, first+1, ... (wrapping below `end`), in
  // bursts of `burst` with `pause` between them; on `cpu` if >= 0.
  MarkerWriter(std::string trace_marker, int first, int end, int burst, std::chrono::microseconds pause, int cpu = -1)
      : path_(std::move(trace_marker)) {
    thread_ = std::thread([this, first, end, burst, pause, cpu] {
      if (cpu >= 0) pin_current_thread(cpu);
      int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) {
        error_ = "open " + path_ + ": " + std::strerror(errno);
        return;
      }
      for (int n = first; !stop_;) {
        for (int i = 0; i < burst && !stop_; ++i) {
          std::string t = marker_text(n);
          if (::write(fd, t.data(), t.size()) != static_cast<ssize_t>(t.size())) {
            error_ = "write " + path_ + ": " + std::strerror(errno);
            stop_ = true;
            break;
          }
          ++written_;
          n = n + 1 < end ? n + 1 : first;
        }
        std::this_thread::sleep_for(pause);
      }
      ::close(fd);
    });
  }
  ~MarkerWriter() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long written() const { return written_; }
  const std::string& error() const { return error_; }  // after Stop()

 private:
  std::string path_;
  std::atomic<bool> stop_{false};
  std::atomic<long> written_{0};
  std::string error_;
  std::thread thread_;
};

// Writes markers m-<lo> .. m-<hi-1> once each from `cpu`; "" or the error.
std::string write_marker_range(const std::string& trace_marker, int cpu, int lo, int hi) {
  std::string err;
  std::thread t([&] {
    pin_current_thread(cpu);
    int fd = ::open(trace_marker.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      err = "open " + trace_marker + ": " + std::strerror(errno);
      return;
    }
    for (int n = lo; n < hi; ++n) {
      std::string s = marker_text(n);
      if (::write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) {
        err = "write: " + std::string(std::strerror(errno));
        break;
      }
      if ((n - lo) % 20 == 19) std::this_thread::sleep_for(200us);
    }
    ::close(fd);
  });
  t.join();
  return err;
}

// The marker numbers a collector got within [lo, hi), in the order it got them.
std::vector<int> markers_in_range(Collector& col, bool binary, unsigned id, int lo, int hi) {
  std::vector<std::string> texts;
  if (binary) {
    for (const auto& r : col.Records())
      if (r.header.id == id)
        texts.emplace_back(r.payload.data(), strnlen(r.payload.data(), std::min<std::size_t>(64, r.payload.size())));
  } else {
    texts = col.Lines();
  }
  std::vector<int> out;
  for (const auto& t : texts) {
    auto at = binary ? t.find("m-") : t.find("text=m-");
    if (at == std::string::npos) continue;
    if (!binary) at += 5;
    if (at + 8 > t.size()) continue;
    int n = marker_number(t.substr(at, 8));
    if (n >= lo && n < hi) out.push_back(n);
  }
  return out;
}

std::string describe_sequence(const std::vector<int>& got, int lo, int hi) {
  std::size_t first = 0;
  while (first < got.size() && static_cast<int>(first) < hi - lo && got[first] == lo + static_cast<int>(first)) ++first;
  return std::to_string(got.size()) + " markers of " + std::to_string(hi - lo) + "; first difference at position " +
         std::to_string(first) + ": got " + (first < got.size() ? marker_text(got[first]) : "<end>");
}

// Every CPU's ring closed (no stream open), as per_cpu/cpuN/stats says.
bool every_ring_closed(const MountedEventfs& m, int cpus) {
  for (int c = 0; c < cpus; ++c)
    if (parse_stats(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")))["reader"] != "closed") return false;
  return true;
}

std::string ring_modes(const MountedEventfs& m, int cpus) {
  std::string out;
  for (int c = 0; c < cpus; ++c)
    out += " cpu" + std::to_string(c) + ":" +
           parse_stats(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")))["reader"];
  return out;
}

// ---------------------------------------------------------------------------
// 4. Stream readers killed mid-read.

class FaultStreams : public FaultTest {};

TEST_F(FaultStreams, ReadersKilledMidReadLeaveTheDaemonServingTheNextReaders) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const unsigned id = static_cast<unsigned>(std::strtoul(slurp(m / "marker/id").c_str(), nullptr, 10));
  ASSERT_EQ(id, 1000u);
  std::mt19937 rng(seed_ ^ 0x5eedu);
  auto stream_path = [&] {
    if (rng() % 3 == 0) return m / "trace_pipe";
    return m / ("per_cpu/cpu" + std::to_string(rng() % static_cast<unsigned>(cpus)) + "/trace_pipe_raw");
  };

  MarkerWriter markers(inst + "/trace_marker", 0, 900000, 20, 1000us);
  long opened = 0, killed = 0, killed_in_read = 0, churn_opens = 0, churn_reads = 0;
  std::vector<std::string> problems;
  std::mutex mu;
  auto problem = [&](const std::string& p) {
    std::lock_guard lock(mu);
    if (problems.size() < 20) problems.push_back(p);
  };
  Children kids;
  for (int i = 0; i < 6; ++i, ++opened) kids.SpawnCat(stream_path());

  // Two threads open a stream, read it without waiting a few times, close it.
  std::atomic<bool> stop{false};
  std::atomic<long> opens{0}, reads{0};
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t) {
    std::vector<std::string> paths = {m / "trace_pipe"};
    for (int c = 0; c < cpus; ++c) paths.push_back(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
    churn.emplace_back([&, paths, t] {
      std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
      std::mt19937 r(seed_ + static_cast<unsigned>(t));
      while (!stop) {
        const std::string& p = paths[r() % paths.size()];
        int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
          problem("open " + p + ": " + errno_desc(errno));
          continue;
        }
        ++opens;
        for (int i = 0, n = 1 + static_cast<int>(r() % 3); i < n; ++i) {
          ++reads;
          if (::read(fd, buf.data(), buf.size()) < 0 && errno != EAGAIN)
            problem("read " + p + ": " + errno_desc(errno));
        }
        ::close(fd);
      }
    });
  }

  // For 3 s: now and then SIGKILL a reader, mostly inside read(2), and start another.
  const auto end = Clock::now() + 3s;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    kids.Reap();
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < kids.size(); ++i)
      if (!kids.Status(i)) live.push_back(i);
    if (live.empty()) break;
    std::size_t i = live[rng() % live.size()];
    if (in_read_syscall(kids.pid(i))) ++killed_in_read;
    kids.Signal(i, SIGKILL);
    ++killed;
    auto st = kids.Wait(i, 2s);
    if (!st) problem("a reader (" + std::to_string(kids.pid(i)) + ") survived SIGKILL for 2 s");
    kids.SpawnCat(stream_path());
    ++opened;
  }
  stop = true;
  for (auto& t : churn) t.join();
  churn_opens = opens;
  churn_reads = reads;
  // The rest: every reader still running, killed in its turn.
  kids.Reap();
  std::vector<std::string> ended_alone;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    if (auto st = kids.Status(i)) {
      if (!(WIFSIGNALED(*st) && WTERMSIG(*st) == SIGKILL))
        ended_alone.push_back("cat " + std::to_string(kids.pid(i)) + ": " + describe_status(st) +
                              "; stderr: " + kids.Err(i));
      continue;
    }
    if (in_read_syscall(kids.pid(i))) ++killed_in_read;
    ++killed;
  }
  EXPECT_TRUE(kids.KillAll(SIGKILL, 3s)) << "readers survived SIGKILL";
  markers.Stop();
  std::cout << "[fault] streams: readers started " << opened << ", SIGKILLed " << killed << " (" << killed_in_read
            << " of them inside read(2)); non-blocking opens " << churn_opens << " with " << churn_reads
            << " reads; markers written " << markers.written() << std::endl;
  Count("streams_opened", opened + churn_opens);
  Count("streams_killed", killed);
  Count("killed_in_read", killed_in_read);
  Count("markers", markers.written());
  EXPECT_EQ(markers.error(), "");
  EXPECT_TRUE(problems.empty()) << join(problems);
  EXPECT_TRUE(ended_alone.empty()) << "readers that ended before they were killed:\n" << join(ended_alone);
  EXPECT_GT(killed_in_read, 5) << "hardly a reader was killed inside read(2)";

  ASSERT_TRUE(process_alive(m.pid())) << "the daemon died; stderr: " << m.Stderr();
  ASSERT_TRUE(mounted_at(m.path()));
  // The killed readers' files were released: no ring is read any more.
  EXPECT_TRUE(wait_until([&] { return every_ring_closed(m, cpus); }, 5s))
      << "rings still open 5 s after the last reader was killed:" << ring_modes(m, cpus);

  // New readers get every new marker once, in order, whatever the old ones left queued.
  const int cpu = allowed_cpus().empty() ? 0 : allowed_cpus().back();
  for (bool binary : {false, true}) {
    const int lo = binary ? 910000 : 900000, hi = lo + 300;
    std::vector<std::string> paths;
    if (binary)
      for (int c = 0; c < cpus; ++c) paths.push_back(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
    else
      paths.push_back(m / "trace_pipe");
    Collector col(paths, binary);
    ASSERT_TRUE(col.Start());
    ASSERT_EQ(write_marker_range(inst + "/trace_marker", cpu, lo, hi), "");
    bool all = col.WaitFor([&] { return markers_in_range(col, binary, id, lo, hi).size() >= 300; }, 5s);
    col.WaitQuiet(200ms, 3s);
    col.Stop();
    auto got = markers_in_range(col, binary, id, lo, hi);
    std::vector<int> want(300);
    for (int i = 0; i < 300; ++i) want[static_cast<std::size_t>(i)] = lo + i;
    EXPECT_TRUE(all && got == want) << (binary ? "per_cpu raw: " : "trace_pipe: ") << describe_sequence(got, lo, hi);
    EXPECT_TRUE(col.Problems().empty()) << join(col.Problems());
  }
  // The control files still answer.
  EXPECT_EQ(write_once(m / "sched_switch/enable", "1\n"), 0);
  EXPECT_EQ(slurp(inst + "/events/sched/sched_switch/enable"), "1\n");
  EXPECT_EQ(write_once(m / "sched_switch/enable", "0\n"), 0);
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 5 and 6. The daemon stopped under load.

// A thread reading one stream with blocking read(2)s until one returns 0 or fails.
struct StreamReader {
  std::string path;
  int fd = -1;
  std::atomic<bool> done{false};
  long reads = 0, bytes = 0;
  ssize_t last_n = 0;
  int last_err = 0;
  std::int64_t last_start = 0, last_end = 0;
};

std::shared_ptr<StreamReader> start_reader(const std::string& path) {
  auto r = std::make_shared<StreamReader>();
  r->path = path;
  r->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) {
    r->last_n = -1;
    r->last_err = errno;
    r->done = true;
    return r;
  }
  // Detached: a read the daemon never answers must not hang the test; the
  // thread owns the state it writes.
  std::thread([r] {
    std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
    for (;;) {
      r->last_start = now_ns();
      ssize_t n = ::read(r->fd, buf.data(), buf.size());
      r->last_err = n < 0 ? errno : 0;
      r->last_end = now_ns();
      r->last_n = n;
      ++r->reads;
      if (n <= 0) break;
      r->bytes += n;
    }
    ::close(r->fd);
    r->done = true;
  }).detach();
  return r;
}

// Everything a round puts on a daemon: control workers (two threads and a
// process), reader threads on trace_pipe and every per_cpu raw stream, two
// cat processes, and a trace_marker writer.
class RoundLoad {
 public:
  RoundLoad(MountedEventfs& m, unsigned seed) : m_(m), seed_(seed) {}
  ~RoundLoad() { Finish(); }

  ::testing::AssertionResult Start() {
    inst_ = instance_dir(m_.instance());
    env_ = make_env(m_.path(), read_header(inst_));
    if (int e = write_once(m_ / env_.held.rel, env_.held.add + "\n"))
      return ::testing::AssertionFailure() << "held trigger: " << errno_desc(e) << "; " << slurp(m_ / "error_log");
    if (auto r = open_shared(env_); !r) return r;
    if (!board_.ok()) return ::testing::AssertionFailure() << "mmap: " << std::strerror(errno);
    workers_ = std::make_unique<Workers>(env_, *board_);
    if (workers_->AddProcess({{kIrqEntryEnable, kIrqExitRawEnable}, {kOwnStacktrace}, false, true, true, seed_ + 1}) <
        0)
      return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
    markers_ = std::make_unique<MarkerWriter>(inst_ + "/trace_marker", 0, 900000, 10, 1000us);
    const int cpus = mount_cpus(m_.path());
    readers_.push_back(start_reader(m_ / "trace_pipe"));
    readers_.push_back(start_reader(m_ / "trace_pipe"));
    for (int c = 0; c < cpus; ++c)
      readers_.push_back(start_reader(m_ / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw")));
    kids_.SpawnCat(m_ / "trace_pipe");
    kids_.SpawnCat(m_ / "per_cpu/cpu0/trace_pipe_raw");
    workers_->AddThread({{kWakeupFilter, kWakeupEnable}, {kOwnMigrate, kOwnTraceoff}, true, false, true, seed_ + 2});
    workers_->AddThread(
        {{kFreeRawFilter, kWakeupRawEnable}, {kOwnRawSoftirq, kOwnCpuIdle}, false, true, true, seed_ + 3});
    workers_->Go(60s);  // until Stop
    return ::testing::AssertionSuccess();
  }

  // After the signal: no more markers or control operations.
  void Quiet() {
    if (markers_) markers_->Stop();
    if (workers_) workers_->Stop();
  }

  // Waits (bounded) for every reader thread and cat to end; the ones that did not.
  std::vector<std::string> WaitReaders(std::chrono::milliseconds limit) {
    std::vector<std::string> out;
    wait_until(
        [&] {
          kids_.Reap();
          for (const auto& r : readers_)
            if (!r->done) return false;
          for (std::size_t i = 0; i < kids_.size(); ++i)
            if (!kids_.Status(i)) return false;
          return true;
        },
        limit);
    for (const auto& r : readers_)
      if (!r->done) out.push_back("reader thread of " + r->path);
    for (std::size_t i = 0; i < kids_.size(); ++i)
      if (!kids_.Status(i)) out.push_back("cat " + std::to_string(kids_.pid(i)));
    return out;
  }

  // Waits for the control workers; the stuck ones.
  std::vector<std::string> WaitWorkers(std::chrono::milliseconds limit) {
    auto stuck = workers_ ? workers_->Wait(limit) : std::vector<std::string>{};
    if (stuck.empty()) close_shared(env_);
    return stuck;
  }

  // Ends whatever is left (the daemon must be gone or going for that).
  void Finish() {
    Quiet();
    if (workers_) {
      workers_->Wait(5s);
      workers_->JoinAll();
      workers_.reset();
    }
    close_shared(env_);
    kids_.KillAll(SIGKILL, 2s);
  }

  const std::vector<std::shared_ptr<StreamReader>>& readers() const { return readers_; }
  Children& kids() { return kids_; }
  const Workers* workers() const { return workers_.get(); }
  long markers_written() const { return markers_ ? markers_->written() : 0; }

 private:
  MountedEventfs& m_;
  unsigned seed_;
  std::string inst_;
  Env env_;
  SharedBoard board_;
  std::unique_ptr<Workers> workers_;
  std::unique_ptr<MarkerWriter> markers_;
  std::vector<std::shared_ptr<StreamReader>> readers_;
  Children kids_;
};

struct SignalTotals {
  long rounds = 0, signals = 0, reader_reads = 0, reader_bytes = 0, streams = 0, markers = 0;
  Totals control;
  std::map<std::string, long> endings;  // how the readers' last reads ended
  void add_readers(RoundLoad& load) {
    for (const auto& r : load.readers()) {
      ++streams;
      if (!r->done) continue;
      reader_reads += r->reads;
      reader_bytes += r->bytes;
      ++endings[r->last_n == 0 ? "end of file" : r->last_n < 0 ? errno_desc(r->last_err) : "data"];
    }
    streams += static_cast<long>(load.kids().size());
    markers += load.markers_written();
  }
  std::string endings_text() const {
    std::string out;
    for (const auto& [k, n] : endings) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(n);
    return out;
  }
};

class FaultSignals : public FaultTest {};

TEST_F(FaultSignals, SigtermAtRandomPointsUnderLoadGivesEveryReaderEndOfFile) {
  if (auto ev = missing_events(); !ev.empty()) GTEST_SKIP() << ev << " is not available on this kernel";
  std::mt19937 rng(seed_ ^ 0x7e12u);
  SignalTotals tot;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("SIGTERM round " + std::to_string(round));
    const auto delay = std::chrono::milliseconds(150 + rng() % 1050);
    MarkerMount mm;
    MountedEventfs& m = mm.m;
    ASSERT_TRUE(m.Start());
    ASSERT_TRUE(m.is_child());
    const std::string inst = instance_dir(m.instance());
    const std::string name = m.instance();
    RoundLoad load(m, seed_ + 100u * static_cast<unsigned>(round));
    ASSERT_TRUE(load.Start());
    std::this_thread::sleep_for(delay);
    ASSERT_TRUE(process_alive(m.pid())) << "the daemon died under load; stderr: " << m.Stderr();
    const std::int64_t t_sig = now_ns();
    ASSERT_EQ(::kill(m.pid(), SIGTERM), 0);
    ++tot.signals;
    ++tot.rounds;
    load.Quiet();
    auto stuck = load.WaitReaders(3s);
    EXPECT_TRUE(stuck.empty()) << "still reading 3 s after SIGTERM: " << join(stuck, ", ");
    auto stuck_workers = load.WaitWorkers(5s);
    EXPECT_TRUE(stuck_workers.empty()) << "control workers still in a call 5 s after SIGTERM: "
                                       << join(stuck_workers, ", ");
    auto st = m.WaitExit(10s);
    if (!st) {
      ADD_FAILURE() << "the daemon did not exit within 10 s of SIGTERM; stderr: " << m.Stderr();
      ::kill(m.pid(), SIGKILL);
      m.WaitExit(5s);
    }
    std::cout << "[fault] round " << round << ": SIGTERM after " << delay.count() << " ms of load" << std::endl;

    // Every reader: end of file, never an error.
    std::vector<std::string> bad;
    for (const auto& r : load.readers()) {
      if (!r->done) continue;
      if (r->last_n != 0)
        bad.push_back(r->path.substr(m.path().size() + 1) + ": its last read (begun " +
                      std::to_string(ms_of(r->last_start - t_sig)) + " ms after SIGTERM, after " +
                      std::to_string(r->reads - 1) + " reads with data) returned " +
                      (r->last_n < 0 ? "-1, " + errno_desc(r->last_err) : std::to_string(r->last_n)) +
                      " instead of end of file");
    }
    Children& kids = load.kids();
    for (std::size_t i = 0; i < kids.size(); ++i) {
      auto s = kids.Status(i);
      if (s && !(WIFEXITED(*s) && WEXITSTATUS(*s) == 0))
        bad.push_back("cat " + std::to_string(i) + ": " + describe_status(s) + "; stderr: " + kids.Err(i));
      else if (s && !kids.Err(i).empty())
        bad.push_back("cat " + std::to_string(i) + " stderr: " + kids.Err(i));
    }
    EXPECT_TRUE(bad.empty()) << "readers that did not get end of file after SIGTERM:\n" << join(bad);
    tot.add_readers(load);
    // Control operations that finished before the signal went as expected.
    Totals ctl;
    if (load.workers())
      for (int i = 0; i < load.workers()->size(); ++i) {
        ctl.add(load.workers()->result(i), i, t_sig);
        tot.control.add(load.workers()->result(i), i, t_sig);
      }
    EXPECT_TRUE(ctl.problems.empty()) << join(ctl.problems);
    load.Finish();

    if (st) {
      EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << describe_status(st) << "; stderr: " << m.Stderr();
    }
    EXPECT_FALSE(mounted_at(m.path()));
    EXPECT_FALSE(exists(inst)) << "the instance outlived the daemon; stderr: " << m.Stderr();
    EXPECT_FALSE(exists(owner_record(name)));
    if (HasFailure()) break;  // one failing round tells it
  }
  std::cout << "[fault] SIGTERM: rounds " << tot.rounds << ", signals sent " << tot.signals << "; streams opened "
            << tot.streams << " (reader threads' reads " << tot.reader_reads << ", bytes " << tot.reader_bytes
            << "; their last reads: " << tot.endings_text() << "); markers written " << tot.markers
            << "; control: " << tot.control.signal_line() << std::endl;
  Count("rounds", tot.rounds);
  Count("signals_sent", tot.signals);
  Count("streams_opened", tot.streams);
  Count("control_writes_tried", tot.control.writes + tot.control.refusals);
  Count("control_writes_accepted", tot.control.accepted);
  Count("control_writes_refused", tot.control.refused);
  Count("control_reads", tot.control.reads + tot.control.preads);
}

TEST_F(FaultSignals, KillNineAtRandomPointsUnderLoadLeavesAnInstanceTheNextDaemonReclaims) {
  if (auto ev = missing_events(); !ev.empty()) GTEST_SKIP() << ev << " is not available on this kernel";
  std::mt19937 rng(seed_ ^ 0x9c11u);
  SignalTotals tot;
  long reclaim_ms_total = 0;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("SIGKILL round " + std::to_string(round));
    const auto delay = std::chrono::milliseconds(150 + rng() % 1050);
    MarkerMount mm;
    MountedEventfs& first = mm.m;
    ASSERT_TRUE(first.Start());
    ASSERT_TRUE(first.is_child());
    const std::string name = first.instance();
    const std::string inst = instance_dir(name);
    {
      RoundLoad load(first, seed_ + 1000u + 100u * static_cast<unsigned>(round));
      ASSERT_TRUE(load.Start());
      std::this_thread::sleep_for(delay);
      ASSERT_TRUE(process_alive(first.pid())) << "the daemon died under load; stderr: " << first.Stderr();
      ASSERT_EQ(::kill(first.pid(), SIGKILL), 0);
      ++tot.signals;
      ++tot.rounds;
      load.Quiet();
      auto st = first.WaitExit(5s);
      ASSERT_TRUE(st) << "the daemon outlived SIGKILL";
      EXPECT_TRUE(WIFSIGNALED(*st) && WTERMSIG(*st) == SIGKILL) << describe_status(st);
      // Readers of a dead daemon's mount fail, but they return.
      auto stuck = load.WaitReaders(3s);
      EXPECT_TRUE(stuck.empty()) << "still in read(2) 3 s after the daemon was killed: " << join(stuck, ", ");
      auto stuck_workers = load.WaitWorkers(5s);
      EXPECT_TRUE(stuck_workers.empty()) << "control workers still in a call 5 s after the daemon was killed: "
                                         << join(stuck_workers, ", ");
      tot.add_readers(load);
      if (load.workers())
        for (int i = 0; i < load.workers()->size(); ++i) tot.control.add(load.workers()->result(i), i, 0);
      load.Finish();
      std::cout << "[fault] round " << round << ": SIGKILL after " << delay.count() << " ms of load" << std::endl;
    }
    force_unmount(first.path());
    EXPECT_FALSE(mounted_at(first.path()));
    // Killed, the daemon could clean nothing up.
    EXPECT_TRUE(exists(inst)) << "the instance of a killed daemon is gone";

    MountOptions o;
    o.instance_name = name;
    o.timeout = 30s;  // reclaiming walks every event of the instance
    MountedEventfs second(o);
    const std::int64_t r0 = now_ns();
    ASSERT_TRUE(second.Start()) << "the next daemon on instance " << name << " did not start";
    const long reclaim_ms = ms_of(now_ns() - r0);
    reclaim_ms_total += reclaim_ms;
    EXPECT_EQ(second.Stderr(), "");
    ASSERT_TRUE(exists(inst));
    auto leftovers = instance_leftovers(inst);
    EXPECT_TRUE(leftovers.empty()) << "left in the reclaimed instance:\n" << head_lines(join(leftovers));
    EXPECT_EQ(slurp(inst + "/tracing_on"), "1\n");
    EXPECT_TRUE(
        wait_until([&] { return std::strtol(slurp(owner_record(name)).c_str(), nullptr, 10) == second.pid(); }, 2s))
        << slurp(owner_record(name));
    // The new daemon works on it.
    EXPECT_EQ(write_once(second / "sched_switch/trigger", "traceoff:2 if prev_pid == -7\n"), 0)
        << slurp(second / "error_log");
    EXPECT_EQ(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")),
              std::vector<std::string>{"traceoff:count=2 if prev_pid == -7"});
    EXPECT_EQ(slurp(second / "sched_switch/trigger"), "traceoff:count=2 if prev_pid == -7\n");
    EXPECT_EQ(slurp(second / "sched_switch/format"), kGoldenSchedSwitch);
    second.Stop();
    EXPECT_FALSE(exists(inst)) << "the instance outlived the second daemon";
    EXPECT_FALSE(exists(owner_record(name)));
    std::cout << "[fault] round " << round << ": the next daemon reclaimed " << name << " and started in " << reclaim_ms
              << " ms" << std::endl;
    if (HasFailure()) break;
  }
  std::cout << "[fault] SIGKILL: rounds " << tot.rounds << ", signals sent " << tot.signals << "; streams opened "
            << tot.streams << " (reader threads' reads " << tot.reader_reads << ", bytes " << tot.reader_bytes
            << "; their last reads: " << tot.endings_text() << "); markers written " << tot.markers
            << "; control: " << tot.control.signal_line() << "; reclaiming took " << reclaim_ms_total << " ms in all"
            << std::endl;
  Count("rounds", tot.rounds);
  Count("signals_sent", tot.signals);
  Count("streams_opened", tot.streams);
  Count("control_writes_tried", tot.control.writes + tot.control.refusals);
  Count("control_writes_accepted", tot.control.accepted);
  Count("control_writes_refused", tot.control.refused);
  Count("control_reads", tot.control.reads + tot.control.preads);
}

}  // namespace
}  // namespace eventfs_it
