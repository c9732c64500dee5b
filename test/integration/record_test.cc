// eventfs-record against a real mount, read back by babeltrace2 (a CTF reader
// no one here wrote): sched_switch of two known threads compared with a second
// mount's trace_pipe and with the libtraceevent reader of a third instance;
// numbered trace_marker writes; a forced overrun as babeltrace2's
// discarded-events notice; bad input, a full disk and signals, each with the
// events turned back off. Needs root, FUSE, a live tracefs and babeltrace2.

#include <sys/mount.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/sched_switch.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace stream;

constexpr const char* kRecordBinary = EVENTFS_RECORD_BINARY;
constexpr const char* kBabeltrace = "/usr/bin/babeltrace2";  // scripts/deps.sh installs it

// One event as babeltrace2's text output shows it.
struct CtfEvent {
  std::string time;  // "secs.nanosecs" (--clock-seconds)
  std::string name;
  int cpu = -1;
  pid_t pid = -1;
  std::map<std::string, std::string> fields;  // strings unquoted; enums as their label
};

// Splits "a = 1, b = "x, y", c = ( "S" : container = 83 ), d = [ [0] = 1 ]" at
// its top-level commas.
std::map<std::string, std::string> parse_fields(const std::string& s) {
  std::map<std::string, std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t eq = s.find(" = ", i);
    if (eq == std::string::npos) break;
    std::string key = s.substr(i, eq - i);
    std::size_t j = eq + 3;
    std::string value;
    if (j < s.size() && s[j] == '"') {
      for (++j; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          ++j;
          value += s[j] == 'n' ? '\n' : s[j];
        } else {
          value += s[j];
        }
      }
      ++j;
    } else {
      int depth = 0;
      std::size_t start = j;
      for (; j < s.size(); ++j) {
        if (s[j] == '(' || s[j] == '[' || s[j] == '{') ++depth;
        if (s[j] == ')' || s[j] == ']' || s[j] == '}') --depth;
        if (depth == 0 && s.compare(j, 2, ", ") == 0) break;
      }
      value = s.substr(start, j - start);
      // An enumeration: ( "LABEL" : container = N ) -> LABEL.
      static const std::regex en("^\\( \"([^\"]*)\" : container = (-?\\d+) \\)$");
      std::smatch m;
      if (std::regex_match(value, m, en)) value = m[1];
    }
    out[key] = value;
    i = j;
    if (s.compare(i, 2, ", ") == 0) i += 2;
  }
  return out;
}

bool parse_ctf_line(const std::string& line, CtfEvent& e) {
  static const std::regex re(
      "^\\[(\\d+\\.\\d{9})\\] \\(\\+[^)]*\\) \\S+ (\\w+): \\{ cpu_id = (\\d+) \\}, \\{ pid = (-?\\d+) \\}, \\{ (.*) \\}$");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  e.time = m[1];
  e.name = m[2];
  e.cpu = std::stoi(m[3]);
  e.pid = std::stoi(m[4]);
  e.fields = parse_fields(m[5]);
  return true;
}

struct Babeltrace {
  RunResult run;
  std::vector<CtfEvent> events;
  std::vector<std::string> odd;        // lines that are not events
  unsigned long long discarded = 0;    // the sum of its discarded-events notices
  std::size_t notices = 0;
};

Babeltrace babeltrace(const std::string& dir) {
  Babeltrace b;
  b.run = eventfs_it::run({kBabeltrace, "--clock-seconds", dir}, 60s);
  for (const auto& line : split_lines(b.run.out)) {
    CtfEvent e;
    if (parse_ctf_line(line, e)) b.events.push_back(std::move(e));
    else if (!line.empty() && b.odd.size() < 10) b.odd.push_back(line);
  }
  // "WARNING: Tracer discarded 123 events between [...] and [...] in trace ..."
  static const std::regex notice("discarded (\\d+) events? between");
  const std::string all = b.run.out + b.run.err;
  for (auto it = std::sregex_iterator(all.begin(), all.end(), notice); it != std::sregex_iterator(); ++it) {
    b.discarded += std::stoull((*it)[1]);
    ++b.notices;
  }
  return b;
}

std::string describe(const Babeltrace& b) {
  return "babeltrace2 " + b.run.describe().substr(0, 600) + "; other lines: " + join(b.odd);
}

// The recorder run in the background, ended by a signal.
class Recorder {
 public:
  explicit Recorder(std::vector<std::string> args) {
    std::vector<std::string> argv{kRecordBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    err_ = make_capture_fd("record-stderr");
    pid_ = spawn(argv, -1, err_);
  }
  ~Recorder() {
    if (pid_ > 0) Stop(SIGKILL);
    if (err_ >= 0) ::close(err_);
  }
  pid_t pid() const { return pid_; }
  // Sends `sig` and returns the wait status (-1: it did not end within 15 s).
  int Stop(int sig = SIGINT) {
    if (pid_ <= 0) return status_;
    ::kill(pid_, sig);
    if (!wait_exit(pid_, 15s, status_)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      status_ = -1;
    }
    pid_ = -1;
    return status_;
  }
  std::string Stderr() const { return read_capture(err_); }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  int status_ = -1;
};

// One line on stderr, from eventfs-record.
::testing::AssertionResult OneErrorLine(const RunResult& r, const std::string& needle) {
  if (!r.exited() || r.exit_code() == 0)
    return ::testing::AssertionFailure() << "expected a non-zero exit: " << r.describe();
  auto lines = split_lines(r.err);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() != 1 || lines[0].rfind("eventfs-record: ", 0) != 0 ||
      lines[0].find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "expected one line 'eventfs-record: ...' with '" << needle
                                         << "': " << r.describe();
  return ::testing::AssertionSuccess();
}

RunResult record(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 30s) {
  std::vector<std::string> argv{kRecordBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return eventfs_it::run(argv, timeout);
}

class RecordTest : public StreamTest {
 protected:
  void SetUp() override {
    StreamTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(exists(kBabeltrace)) << kBabeltrace << " is missing: the recordings cannot be checked";
  }
};

using SwitchKey = std::tuple<int, pid_t, std::string, char, pid_t, std::string>;  // cpu first

SwitchKey key_of(const Switch& s) { return {s.cpu, s.prev_pid, s.prev_comm, s.prev_state, s.next_pid, s.next_comm}; }

// A babeltrace2 sched_switch as a Switch; prev_state is a letter (its enum
// label) or the letter's code (an 8-bit integer).
bool switch_of(const CtfEvent& e, Switch& s) {
  try {
    s.prev_comm = e.fields.at("prev_comm");
    s.prev_pid = std::stoi(e.fields.at("prev_pid"));
    const std::string& st = e.fields.at("prev_state");
    s.prev_state = st.size() == 1 && !std::isdigit(static_cast<unsigned char>(st[0])) ? st[0]
                                                                                      : static_cast<char>(std::stoi(st));
    s.next_comm = e.fields.at("next_comm");
    s.next_pid = std::stoi(e.fields.at("next_pid"));
  } catch (const std::exception&) {
    return false;
  }
  s.cpu = e.cpu;
  s.common_pid = e.pid;
  return true;
}

TEST_F(RecordTest, SchedSwitchOfTwoKnownThreadsMatchesTracePipeAndALibtraceeventReader) {
  MountedEventfs a, b;  // a: recorded; b: read through its trace_pipe
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  const int cpus = mount_cpus(a.path());
  ASSERT_GT(cpus, 0);
  RefInstance ref;
  ASSERT_EQ(ref.error(), "");
  ASSERT_TRUE(Writes(ref / "buffer_size_kb", "4096"));
  const std::string out = a.dir() / "rec";

  Collector col(stream_paths(b, Via::Text, cpus), false);
  ASSERT_TRUE(col.Start());
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "1"));
  ASSERT_TRUE(Writes(b / "sched_switch/enable", "1", b / "error_log"));
  Recorder rec({"-m", a.path(), "-e", "sched_switch", "-o", out});
  ASSERT_TRUE(wait_until([&] { return slurp(a / "sched_switch/enable") == "1\n"; }, 5s)) << rec.Stderr();
  const int cpu = test_cpu();
  PingPongResult pp = ping_pong(200, cpu);
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Writes(b / "sched_switch/enable", "0", b / "error_log"));
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "0"));
  const int st = rec.Stop(SIGINT);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();
  EXPECT_EQ(slurp(a / "sched_switch/enable"), "0\n") << "the recorder left the event on";
  EXPECT_TRUE(col.WaitQuiet(500ms, 10s));
  col.Stop();
  ASSERT_EQ(pp.rounds_done, 200);

  auto ours = [&](const Switch& s) {
    return s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong;
  };
  std::map<SwitchKey, int> recorded, piped, want;
  std::vector<std::string> odd;
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  EXPECT_TRUE(bt.odd.empty()) << describe(bt);
  EXPECT_EQ(bt.notices, 0u) << "discarded events: the comparison may be off; " << describe(bt);
  std::string last_time;
  for (const auto& e : bt.events) {
    Switch s;
    if (e.name != "sched_switch" || !switch_of(e, s)) {
      if (odd.size() < 10) odd.push_back("not a sched_switch: " + e.name);
      continue;
    }
    // The muxed output is in time order; the context's pid is the task switched out.
    if (e.time < last_time && e.time.size() == last_time.size() && odd.size() < 10)
      odd.push_back("time goes back at " + e.time);
    last_time = e.time;
    if (!ours(s)) continue;
    if (s.common_pid != s.prev_pid && odd.size() < 10)
      odd.push_back("pid " + std::to_string(s.common_pid) + " is not prev_pid " + std::to_string(s.prev_pid));
    ++recorded[key_of(s)];
  }
  for (const auto& line : col.Lines()) {
    Switch s;
    if (parse_switch_line(line, s) && ours(s)) ++piped[key_of(s)];
  }
  ReferenceRead reference = read_reference_switches(ref.path(), cpus);
  ASSERT_EQ(reference.error, "");
  ASSERT_EQ(reference.missed, 0) << "the reference instance lost events";
  for (const auto& s : reference.switches)
    if (ours(s)) ++want[key_of(s)];
  EXPECT_TRUE(odd.empty()) << join(odd);
  auto total = [](const std::map<SwitchKey, int>& m) {
    int n = 0;
    for (const auto& [k, v] : m) n += v;
    return n;
  };
  EXPECT_GT(total(want), 100);
  EXPECT_EQ(total(recorded), total(want)) << "trace_pipe: " << total(piped);
  EXPECT_TRUE(recorded == want) << "the recording differs from the libtraceevent reader";
  EXPECT_TRUE(recorded == piped) << "the recording differs from the second mount's trace_pipe";
  std::size_t named = 0;
  for (const auto& [k, n] : recorded)
    if (std::get<2>(k) == "efs-ping" && std::get<5>(k) == "efs-pong") named += static_cast<std::size_t>(n);
  EXPECT_GT(named, 50u) << "few direct efs-ping -> efs-pong switches";
}

TEST_F(RecordTest, EveryMarkerOnceInOrderWithItsTaskAndCpu) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string out = m.dir() / "rec";
  Recorder rec({"-m", m.path(), "-e", "mark*", "-o", out});
  ASSERT_TRUE(wait_until([&] { return exists(out + "/stream_" + std::to_string(cpu)); }, 5s)) << rec.Stderr();
  std::this_thread::sleep_for(100ms);  // its streams are open once its files are made
  constexpr int kMarkers = 2000;
  MarkerWriteResult w = write_markers(instance_dir(m.instance()) + "/trace_marker", cpu, kMarkers, 10, 500us);
  ASSERT_EQ(w.error, "");
  ASSERT_EQ(w.written, kMarkers);
  std::this_thread::sleep_for(300ms);
  const int st = rec.Stop(SIGTERM);
  const std::string err = rec.Stderr();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << err;
  EXPECT_NE(err.find("eventfs-record: " + std::to_string(kMarkers) + " events, 0 lost"), std::string::npos) << err;

  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  EXPECT_TRUE(bt.odd.empty()) << describe(bt);
  EXPECT_EQ(bt.notices, 0u) << describe(bt);
  std::vector<int> seq;
  std::vector<std::string> odd;
  for (const auto& e : bt.events) {
    auto text = e.fields.count("text") ? e.fields.at("text") : "";
    int n = marker_number(strip_marker_end(text, '\n'));
    if (e.name != "marker" || n < 0 || e.cpu != cpu || e.pid != w.tid || e.fields.size() != 1) {
      if (odd.size() < 10)
        odd.push_back(e.name + " on cpu" + std::to_string(e.cpu) + " pid " + std::to_string(e.pid) + " text '" + text +
                      "'");
      continue;
    }
    seq.push_back(n);
  }
  EXPECT_TRUE(odd.empty()) << "writer tid " << w.tid << ": " << join(odd);
  std::vector<int> expected(kMarkers);
  for (int i = 0; i < kMarkers; ++i) expected[i] = i;
  EXPECT_TRUE(seq == expected) << seq.size() << " markers, not m-000000..m-" << kMarkers - 1 << " in order";
}

TEST_F(RecordTest, AnOverrunShowsAsBabeltracesDiscardedEventsWithTheKernelsCount) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  ASSERT_TRUE(Writes(inst + "/buffer_size_kb", "4"));
  constexpr int kMarkers = 5000;
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kMarkers);
  ASSERT_EQ(w.written, kMarkers);
  const long long overrun = stat_value(slurp(inst + "/per_cpu/cpu" + std::to_string(cpu) + "/stats"), "overrun");
  ASSERT_GT(overrun, 0);
  const std::string out = m.dir() / "rec";
  RunResult r = record({"-m", m.path(), "-e", "marker", "-o", out, "-t", "1"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_NE(r.err.find(" lost"), std::string::npos) << r.describe();

  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  std::size_t markers = 0;
  for (const auto& e : bt.events)
    if (e.name == "marker" && e.cpu == cpu) ++markers;
  EXPECT_GT(bt.notices, 0u) << describe(bt);
  EXPECT_EQ(bt.discarded, static_cast<unsigned long long>(overrun)) << describe(bt);
  EXPECT_EQ(markers + bt.discarded, static_cast<std::size_t>(kMarkers)) << describe(bt);
}

TEST_F(RecordTest, EnumFieldsPrintTheirNames) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  bool has_enum = false;
  for (const auto& t : list_dir(m / "types"))
    if (slurp(m / ("types/" + t)).find("parent = enum;") != std::string::npos) has_enum = true;
  ASSERT_TRUE(has_enum) << "no enumeration in types/ (task_state and softirq_vec are the default catalog's)";
  const std::string out = m.dir() / "rec";
  RunResult r = record({"-m", m.path(), "-e", "sched_switch", "-e", "softirq_entry", "-o", out, "-t", "1"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  const std::string metadata = slurp(out + "/metadata");
  EXPECT_NE(metadata.find("enum : integer"), std::string::npos);
  // The clock is the one the mount's trace_clock selects.
  std::smatch sel;
  const std::string clock = slurp(m / "trace_clock");
  ASSERT_TRUE(std::regex_search(clock, sel, std::regex("\\[([a-z0-9_-]+)\\]"))) << clock;
  EXPECT_NE(metadata.find("clock {\n\tname = " + sel[1].str() + ";"), std::string::npos) << metadata.substr(0, 2000);
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  static const std::regex label("^[A-Z_]+$|^[A-Za-z]$");
  std::size_t switches = 0, bad = 0;
  std::string example;
  for (const auto& e : bt.events) {
    const char* f = e.name == "sched_switch" ? "prev_state" : e.name == "softirq_entry" ? "vec" : nullptr;
    if (!f || !e.fields.count(f)) continue;
    switches += e.name == "sched_switch";
    if (!std::regex_match(e.fields.at(f), label)) {
      ++bad;
      example = e.name + " " + f + " = " + e.fields.at(f);
    }
  }
  EXPECT_GT(switches, 0u);
  EXPECT_EQ(bad, 0u) << "a value printed without its name: " << example;
}

TEST_F(RecordTest, BadInputIsOneLineAndLeavesNothingEnabled) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string out = m.dir() / "rec";
  EXPECT_TRUE(OneErrorLine(record({"-m", m.path(), "-e", "sched_switch", "-e", "no_such_event", "-o", out}),
                           "no event 'no_such_event'"));
  EXPECT_TRUE(OneErrorLine(record({"-m", m.path(), "-e", "zz_*", "-o", out}), "no event matches 'zz_*'"));
  EXPECT_FALSE(exists(out)) << "nothing is written for an event that does not exist";
  EXPECT_TRUE(OneErrorLine(record({"-m", m.dir().path(), "-e", "sched_switch", "-o", out}), "is not an eventfs mount"));
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(out + "/keep", "x"));
  EXPECT_TRUE(OneErrorLine(record({"-m", m.path(), "-e", "sched_switch", "-o", out, "-t", "1"}),
                           "exists and is not empty"));
  EXPECT_EQ(slurp(out + "/keep"), "x");
  const std::string out2 = m.dir() / "rec2";
  EXPECT_TRUE(OneErrorLine(record({"-m", m.path(), "-e", "sched_*", "-o", out2, "--", "/nonexistent/command"}),
                           "cannot run /nonexistent/command"));
  EXPECT_TRUE(OneErrorLine(record({"-m", m.path(), "-o", out2}), "no event given"));
  for (const auto& e : {"sched_switch", "sched_wakeup", "sched_process_exec"})
    EXPECT_EQ(slurp(m / (std::string(e) + "/enable")), "0\n") << e << " was left enabled";
}

// Without -m: the eventfs mount there is, and a clear line when there are
// several (or none).
TEST_F(RecordTest, WithoutMountItRecordsTheOneEventfsMountThereIs) {
  auto eventfs_mounts = [] {
    std::set<std::string> points;
    for (const auto& line : split_lines(slurp("/proc/self/mounts"))) {
      std::istringstream in(line);
      std::string src, point, type;
      in >> src >> point >> type;
      if (type == "fuse.eventfs") points.insert(point);
    }
    return points;
  };
  const bool others = !eventfs_mounts().empty();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string out = m.dir() / "rec";
  if (!others) {
    RunResult r = record({"-e", "sched_switch", "-o", out, "-t", "1"});
    ASSERT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
    Babeltrace bt = babeltrace(out);
    EXPECT_FALSE(bt.events.empty()) << "a second of sched_switch from " << m.path();
    EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  }
  MountedEventfs m2;
  ASSERT_TRUE(m2.Start());
  RunResult r = record({"-e", "sched_switch", "-o", m.dir() / "rec2", "-t", "1"});
  EXPECT_TRUE(OneErrorLine(r, "several eventfs mounts")) << r.describe();
  EXPECT_NE(r.err.find(m.path()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(m2.path()), std::string::npos) << r.err;
  EXPECT_FALSE(exists(m.dir() / "rec2"));
}

TEST_F(RecordTest, ACommandIsRecordedUntilItEnds) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string out = m.dir() / "rec";
  RunResult r = record({"-m", m.path(), "-e", "sched_process_*", "-o", out, "--", "/bin/sh", "-c", "/bin/true; exit 3"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.describe();
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  // The shell forks /bin/true, which execs and exits.
  std::size_t execs = 0;
  for (const auto& e : bt.events)
    if (e.name == "sched_process_exec" && e.fields.count("filename") && e.fields.at("filename") == "/bin/true") ++execs;
  EXPECT_EQ(execs, 1u) << describe(bt);
  EXPECT_EQ(slurp(m / "sched_process_exec/enable"), "0\n");
}

TEST_F(RecordTest, AFullDiskStopsWithOneLineAndKeepsTheWholePackets) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string small = m.dir() / "small";
  ASSERT_EQ(::mkdir(small.c_str(), 0755), 0);
  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=256k"), 0) << std::strerror(errno);
  struct Unmount {
    std::string p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{small};
  const std::string out = small + "/rec";
  // sys_enter/sys_exit of a busy shell loop fill 256 KiB within a second.
  RunResult r = record({"-m", m.path(), "-e", "sys_*", "-e", "sched_switch", "-o", out, "--", "/bin/sh", "-c",
                        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"},
                       60s);
  EXPECT_TRUE(OneErrorLine(r, "No space left on device"));
  for (const auto& e : {"sys_enter", "sys_exit", "sched_switch"})
    EXPECT_EQ(slurp(m / (std::string(e) + "/enable")), "0\n") << e << " was left enabled";
  Babeltrace bt = babeltrace(out);
  EXPECT_EQ(bt.run.exit_code(), 0) << "the partial recording is not readable: " << describe(bt);
  EXPECT_GT(bt.events.size(), 1000u) << describe(bt);
  EXPECT_TRUE(bt.odd.empty()) << describe(bt);
}

}  // namespace
}  // namespace eventfs_it
