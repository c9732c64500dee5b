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

#include "support/kernel_features.h"
#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/sched_switch.h"
#include "support/markers.h"
#include "support/recorded_markers.h"
#include "support/recorder_run.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace stream;

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

class RecordTest : public StreamTest {
 protected:
  void SetUp() override {
    StreamTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(exists(kBabeltrace)) << kBabeltrace << " is missing: the recordings cannot be checked";
  }
};

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
  ASSERT_TRUE(ResizesRings(ref.path(), "4096"));
  const std::string out = a.dir() / "rec";

  Collector col(stream_paths(b, Via::Text, cpus), false);
  ASSERT_TRUE(col.Start());
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "1"));
  ASSERT_TRUE(Writes(b / "sched_switch/enable", "1", b / "error_log"));
  Recorder rec({"-m", a.path(), "-e", "sched_switch", "-o", out});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, 10s)) << rec.Stderr();
  ASSERT_EQ(slurp(a / "sched_switch/enable"), "1\n");
  const int cpu = test_cpu();
  PingPongResult pp = ping_pong(200, cpu);
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Writes(b / "sched_switch/enable", "0", b / "error_log"));
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "0"));
  const int st = rec.Stop(SIGINT);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();
  EXPECT_TRUE(wait_until([&] { return slurp(a / "sched_switch/enable") == "0\n"; }, scaled(2s)))
      << "the recorder left the event on: " << slurp(a / "sched_switch/enable");
  EXPECT_TRUE(col.WaitQuiet(500ms, 10s));
  col.Stop();
  ASSERT_EQ(pp.rounds_done, 200);

  auto ours = [&](const Switch& s) {
    return s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong;
  };
  SwitchCounts recorded, piped, want;
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
  auto total = [](const SwitchCounts& m) {
    int n = 0;
    for (const auto& [k, v] : m) n += v;
    return n;
  };
  EXPECT_GT(total(want), 100);
  EXPECT_EQ(total(recorded), total(want)) << "trace_pipe: " << total(piped) << "; recorder: " << rec.Stderr()
                                          << "; its stats: " << slurp(a / "per_cpu/cpu0/stats")
                                          << slurp(a / "per_cpu/cpu1/stats");
  // Three instances (the recorded mount's, the second mount's, the reference).
  int races_want = 0, races_piped = 0;
  EXPECT_EQ(compare_instances(recorded, want, kernel_reads_switch_state_per_probe(), &races_want), "")
      << "the recording differs from the libtraceevent reader of the reference instance";
  EXPECT_EQ(compare_instances(recorded, piped, kernel_reads_switch_state_per_probe(), &races_piped), "")
      << "the recording differs from the second mount's trace_pipe";
  if (races_want + races_piped > 0)
    std::cout << "[   NOTE   ] " << races_want << " and " << races_piped
              << " switches with R in one instance and S or D in the other "
              << "(this kernel reads the state in each instance's probe)\n";
  std::size_t named = 0;
  for (const auto& [k, n] : recorded)
    if (std::get<2>(k) == "efs-ping" && std::get<5>(k) == "efs-pong") named += static_cast<std::size_t>(n);
  EXPECT_GT(named, 50u) << "few direct efs-ping -> efs-pong switches";
}

// The recording's times are the real time of the events: babeltrace2 prints
// for each marker the time of day (and date) CLOCK_REALTIME said around its
// write, within a millisecond.
TEST_F(RecordTest, TimesAreTheRealTimeTheEventsHappenedAt) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const std::string out = m.dir() / "rec";
  Recorder rec({"-m", m.path(), "-e", "marker", "-o", out});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, 10s)) << rec.Stderr();
  auto realtime = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<long double>(ts.tv_sec) + static_cast<long double>(ts.tv_nsec) / 1e9L;
  };
  constexpr int kMarkers = 20;
  std::vector<std::pair<long double, long double>> around;  // real time before and after each write
  const int fd = ::open((instance_dir(m.instance()) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << errno_text(errno);
  for (int i = 0; i < kMarkers; ++i) {
    const std::string text = marker_text(i);
    const long double before = realtime();
    const ssize_t n = ::write(fd, text.data(), text.size());
    around.emplace_back(before, realtime());
    EXPECT_EQ(n, static_cast<ssize_t>(text.size())) << errno_text(errno);
    std::this_thread::sleep_for(20ms);
  }
  ::close(fd);
  std::this_thread::sleep_for(300ms);
  const int st = rec.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();

  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  int seen = 0;
  for (const auto& e : bt.events) {
    const int i = marker_number(strip_marker_end(e.fields.count("text") ? e.fields.at("text") : "", '\n'));
    if (e.name != "marker" || i < 0 || i >= kMarkers) continue;
    ++seen;
    const long double t = std::strtold(e.time.c_str(), nullptr);
    const auto [before, after] = around[static_cast<std::size_t>(i)];
    EXPECT_TRUE(t >= before - 1e-3L && t <= after + 1e-3L)
        << "marker " << i << " at " << e.time << ", written between " << static_cast<double>(before) << " and "
        << static_cast<double>(after);
  }
  EXPECT_EQ(seen, kMarkers);
  // And the date, as date(1) prints it (UTC).
  auto dated = eventfs_it::run({kBabeltrace, "--clock-date", "--clock-gmt", out}, 60s);
  ASSERT_EQ(dated.exit_code(), 0) << dated.describe();
  char today[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(today, sizeof today, "%Y-%m-%d", std::gmtime(&now));
  EXPECT_NE(dated.out.find(std::string("[") + today + " "), std::string::npos) << dated.out.substr(0, 300);
}

TEST_F(RecordTest, EveryMarkerOnceInOrderWithItsTaskAndCpu) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string out = m.dir() / "rec";
  constexpr int kMarkers = 2000;
  MarkerRecording rec = record_markers(m, {}, out, cpu, kMarkers);
  ASSERT_EQ(rec.failure, "");
  EXPECT_TRUE(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0) << "status " << rec.status << "; " << rec.err;
  EXPECT_NE(rec.err.find("eventfs-record: " + std::to_string(kMarkers) + " events, 0 lost"), std::string::npos)
      << rec.err;
  const pid_t writer = rec.tid;

  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  EXPECT_TRUE(bt.odd.empty()) << describe(bt);
  EXPECT_EQ(bt.notices, 0u) << describe(bt);
  std::vector<int> seq;
  std::vector<std::string> odd;
  for (const auto& e : bt.events) {
    auto text = e.fields.count("text") ? e.fields.at("text") : "";
    int n = marker_number(strip_marker_end(text, '\n'));
    if (e.name != "marker" || n < 0 || e.cpu != cpu || e.pid != writer || e.fields.size() != 1) {
      if (odd.size() < 10)
        odd.push_back(e.name + " on cpu" + std::to_string(e.cpu) + " pid " + std::to_string(e.pid) + " text '" + text +
                      "'");
      continue;
    }
    seq.push_back(n);
  }
  EXPECT_TRUE(odd.empty()) << "writer tid " << writer << ": " << join(odd);
  std::vector<int> expected(kMarkers);
  for (int i = 0; i < kMarkers; ++i) expected[i] = i;
  EXPECT_TRUE(seq == expected) << seq.size() << " markers, not m-000000..m-" << kMarkers - 1 << " in order";
}

// A loss while recording: the recorder is stopped (SIGSTOP) while a marker
// storm fills eventfs's queue of the CPU, which drops its oldest records.
TEST_F(RecordTest, ALossWhileRecordingShowsAsBabeltracesDiscardedEventsWithEventfsCount) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string out = m.dir() / "rec";
  constexpr int kMarkers = 150000;  // more than the queue's 8 MiB of marker records
  MarkerRecording rec = record_marker_storm(m, {}, out, cpu, kMarkers);
  ASSERT_EQ(rec.failure, "");
  const long long lost = rec.lost;
  ASSERT_GT(lost, 0) << "the storm lost nothing: " << slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
  ASSERT_TRUE(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0) << "status " << rec.status << "; " << rec.err;
  EXPECT_NE(rec.err.find(" " + std::to_string(lost) + " lost"), std::string::npos) << rec.err;

  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  std::size_t markers = 0;
  for (const auto& e : bt.events)
    if (e.name == "marker" && e.cpu == cpu) ++markers;
  EXPECT_GT(bt.notices, 0u) << describe(bt);
  EXPECT_EQ(bt.discarded, static_cast<unsigned long long>(lost)) << describe(bt);
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
  const std::string fds = m.dir() / "fds";
  RunResult r = record({"-m", m.path(), "-e", "sched_process_*", "-o", out, "--", "/bin/sh", "-c",
                        "/bin/true; ls -l /proc/$$/fd > " + fds + "; exit 3"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.describe();
  // The command inherits none of the recorder's files (its holds, streams, trace).
  const std::string open_files = slurp(fds);
  EXPECT_NE(open_files.find(" 1 -> " + fds), std::string::npos) << open_files;  // the listing's own
  EXPECT_EQ(open_files.find(m.path()), std::string::npos) << open_files;
  EXPECT_EQ(open_files.find(out), std::string::npos) << open_files;
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  // The shell forks /bin/true, which execs and exits.
  std::size_t execs = 0;
  for (const auto& e : bt.events)
    if (e.name == "sched_process_exec" && e.fields.count("filename") && e.fields.at("filename") == "/bin/true") ++execs;
  EXPECT_EQ(execs, 1u) << describe(bt);
  EXPECT_EQ(slurp(m / "sched_process_exec/enable"), "0\n");
}

// A 256 KiB tmpfs at `path`, unmounted (lazily) when it goes.
struct SmallDisk {
  explicit SmallDisk(std::string where) : path(std::move(where)) {
    if (::mkdir(path.c_str(), 0755) != 0) error = "mkdir " + path + ": " + std::strerror(errno);
    else if (::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=256k") != 0) error = std::strerror(errno);
    else mounted = true;
  }
  ~SmallDisk() {
    if (mounted) ::umount2(path.c_str(), MNT_DETACH);
  }
  std::string path, error;
  bool mounted = false;
};

TEST_F(RecordTest, AFullDiskStopsWithOneLineAndKeepsTheWholePackets) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  SmallDisk disk(m.dir() / "small");
  ASSERT_EQ(disk.error, "");
  const std::string small = disk.path;
  const std::string out = small + "/rec";
  // sys_enter/sys_exit of a shell loop that opens, writes and closes a file
  // each turn fill 256 KiB within a second (a loop of builtins alone makes
  // no system calls: the recorder's own reads were what filled it).
  RunResult r = record({"-m", m.path(), "-e", "sys_*", "-e", "sched_switch", "-o", out, "--", "/bin/sh", "-c",
                        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); echo $i > /dev/null; done"},
                       60s);
  EXPECT_TRUE(OneErrorLine(r, "No space left on device"));
  for (const auto& e : {"sys_enter", "sys_exit", "sched_switch"})
    EXPECT_EQ(slurp(m / (std::string(e) + "/enable")), "0\n") << e << " was left enabled";
  Babeltrace bt = babeltrace(out);
  EXPECT_EQ(bt.run.exit_code(), 0) << "the partial recording is not readable: " << describe(bt);
  EXPECT_GT(bt.events.size(), 1000u) << describe(bt);
  EXPECT_TRUE(bt.odd.empty()) << describe(bt);
}

// A shell loop that writes markers m-<first>..m-<first+n-1> to `trace_marker`
// (one write each).
std::string marker_loop(const std::string& trace_marker, int first, int n) {
  return "exec 3>" + trace_marker + "; i=" + std::to_string(first) + "; while [ $i -lt " + std::to_string(first + n) +
         " ]; do printf 'm-%06d' $i >&3; i=$((i+1)); done";
}

// The marker numbers of a recording, in its order; events that are not
// markers go to `odd`.
std::vector<int> marker_numbers(const Babeltrace& bt, std::vector<std::string>& odd) {
  std::vector<int> seq;
  for (const auto& e : bt.events) {
    const std::string text = e.fields.count("text") ? e.fields.at("text") : "";
    int n = marker_number(strip_marker_end(text, '\n'));
    if (e.name != "marker" || n < 0) {
      if (odd.size() < 10) odd.push_back(e.name + " '" + text + "'");
      continue;
    }
    seq.push_back(n);
  }
  return seq;
}

std::vector<int> numbers_from(int first, int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = first + i;
  return v;
}

// Item 7 of issue 23: the rings hold markers and a loss from before the
// recording; it holds only the markers written while it ran, and no loss.
TEST_F(RecordTest, ARecordingHoldsOnlyWhatHappenedWhileItRan) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string inst = instance_dir(m.instance());
  const std::string kstats = inst + "/per_cpu/cpu" + std::to_string(cpu) + "/stats";
  ASSERT_TRUE(ResizesRings(inst, "8"));
  // A storm that overruns the small ring while no stream is open: the first
  // stream opened is told of the loss, with the time of the records after it.
  constexpr int kOld = 5000;
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, kOld);
  ASSERT_EQ(w.written, kOld);
  ASSERT_GT(stat_value(slurp(kstats), "overrun"), 0) << "the old storm lost nothing: no old loss to leave out";
  ASSERT_GT(stat_value(slurp(kstats), "entries"), 0);
  // Room for the recording (a ring made larger keeps what it holds).
  ASSERT_TRUE(ResizesRings(inst, "1024"));
  ASSERT_GT(stat_value(slurp(kstats), "entries"), 0);
  std::this_thread::sleep_for(200ms);
  // The daemon's "ring entries:" is the kernel's "entries:", what the ring
  // holds unread (the recorder's drain at the end waits for it to be 0).
  EXPECT_EQ(stat_value(slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats")), "ring entries"),
            stat_value(slurp(kstats), "entries"));

  // The daemon's "clock now:" is the kernel's "now ts:" of the instance (ns,
  // from SECS.USECS): between two reads of the kernel's.
  auto kernel_now_ns = [&] {
    std::smatch mt;
    const std::string text = slurp(kstats);
    if (!std::regex_search(text, mt, std::regex("now ts: *(\\d+)\\.(\\d{6})"))) return -1LL;
    return std::stoll(mt[1]) * 1000000000LL + std::stoll(mt[2]) * 1000LL;
  };
  const long long k1 = kernel_now_ns();
  const long long ours = stat_value(slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats")), "clock now");
  const long long k2 = kernel_now_ns();
  ASSERT_GT(k1, 0);
  EXPECT_LE(k1, ours);
  EXPECT_LE(ours, k2);

  // The command runs once the recording has begun: its markers are the new ones.
  const std::string out = m.dir() / "rec";
  constexpr int kNew = 300;
  RunResult r = record({"-m", m.path(), "-e", "marker", "-o", out, "--", "/bin/sh", "-c",
                        marker_loop(inst + "/trace_marker", kOld, kNew)});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_NE(r.err.find("eventfs-record: " + std::to_string(kNew) + " events, 0 lost"), std::string::npos)
      << r.describe();
  EXPECT_NE(r.err.find("from before the start skipped"), std::string::npos)
      << "the old records were not there to leave out: " << r.describe();
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  EXPECT_EQ(bt.notices, 0u) << "a loss from before the recording: " << describe(bt);
  std::vector<std::string> odd;
  std::vector<int> seq = marker_numbers(bt, odd);
  EXPECT_TRUE(odd.empty()) << join(odd);
  EXPECT_TRUE(seq == numbers_from(kOld, kNew)) << seq.size() << " markers, the first "
                                               << (seq.empty() ? -1 : seq.front()) << ", not m-" << kOld << "..";
}

// Item 8 of issue 23: a catalog without ids (each event's id derived by
// eventfs) records.
TEST_F(RecordTest, ACatalogWithoutIdsRecords) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog") + kMarkerEvent;
  text = std::regex_replace(text, std::regex(", id=\\d+"), "");
  ASSERT_EQ(text.find("id="), std::string::npos);
  ASSERT_TRUE(write_text_file(dir / "no-ids.catalog", text));
  MountedEventfs m({"-o", "catalog=" + (dir / "no-ids.catalog")});
  ASSERT_TRUE(m.Start());
  const std::string id = slurp(m / "marker/id");
  ASSERT_TRUE(std::regex_match(id, std::regex("\\d{10}\n"))) << "not a derived id: " << id;
  const std::string out = m.dir() / "rec";
  const std::string inst = instance_dir(m.instance());
  RunResult r = record({"-m", m.path(), "-e", "marker", "-e", "sched_process_exit", "-o", out, "--", "/bin/sh", "-c",
                        marker_loop(inst + "/trace_marker", 0, 10) + "; /bin/true"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_NE(slurp(out + "/metadata").find("\tid = " + id.substr(0, 10) + ";"), std::string::npos);
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  std::size_t exits = 0;
  std::vector<int> seq;
  for (const auto& e : bt.events) {
    if (e.name == "sched_process_exit") ++exits;
    if (e.name == "marker" && e.fields.count("text"))
      seq.push_back(marker_number(strip_marker_end(e.fields.at("text"), '\n')));
  }
  EXPECT_TRUE(seq == numbers_from(0, 10)) << describe(bt);
  EXPECT_GE(exits, 1u) << "the exit of /bin/true: " << describe(bt);
}

// The switches of two known threads in a recording.
std::size_t ping_pong_switches(const Babeltrace& bt, const PingPongResult& pp) {
  std::size_t n = 0;
  for (const auto& e : bt.events) {
    Switch s;
    if (e.name == "sched_switch" && switch_of(e, s) &&
        (s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong))
      ++n;
  }
  return n;
}

// Item 4 of issue 23: two recorders of one event, in either order; the
// one that runs longer records to its end, and the event is off after both.
TEST_F(RecordTest, TwoOverlappingRecordersBothRecordTheirWholeTime) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  ASSERT_EQ(slurp(m / "sched_switch/enable"), "0\n");
  for (bool long_first : {true, false}) {
    SCOPED_TRACE(long_first ? "the long recorder starts first" : "the short recorder starts first");
    const std::string tag = long_first ? "a" : "b";
    const std::string long_out = m.dir() / ("long-" + tag), short_out = m.dir() / ("short-" + tag);
    std::unique_ptr<Recorder> long_rec, short_rec;
    auto start = [&](std::unique_ptr<Recorder>& rec, const std::string& out) {
      rec = std::make_unique<Recorder>(std::vector<std::string>{"-m", m.path(), "-e", "sched_switch", "-o", out});
      return wait_until([&] { return rec->Started(); }, 10s);
    };
    if (long_first) {
      ASSERT_TRUE(start(long_rec, long_out)) << long_rec->Stderr();
    }
    ASSERT_TRUE(start(short_rec, short_out)) << short_rec->Stderr();
    if (!long_first) {
      ASSERT_TRUE(start(long_rec, long_out)) << long_rec->Stderr();
    }
    PingPongResult during = ping_pong(100, cpu, "efs-both");
    int st = short_rec->Stop(SIGINT);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << short_rec->Stderr();
    EXPECT_EQ(slurp(m / "sched_switch/enable"), "1\n") << "the short recorder switched the long one's event off";
    PingPongResult after = ping_pong(100, cpu, "efs-after");
    st = long_rec->Stop(SIGINT);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << long_rec->Stderr();
    EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n") << "left on after both recorders";

    Babeltrace long_bt = babeltrace(long_out), short_bt = babeltrace(short_out);
    ASSERT_EQ(long_bt.run.exit_code(), 0) << describe(long_bt);
    ASSERT_EQ(short_bt.run.exit_code(), 0) << describe(short_bt);
    // The streams are shared (eventfs(5)): each switch is in one recording
    // or the other while both read, in the long one's alone after.
    EXPECT_GE(ping_pong_switches(long_bt, during) + ping_pong_switches(short_bt, during), 100u);
    EXPECT_GE(ping_pong_switches(long_bt, after), 100u) << "the long recorder lost its event when the short one ended";
    EXPECT_EQ(ping_pong_switches(short_bt, after), 0u);
  }
}

TEST_F(RecordTest, ARecorderKilledWithSigkillLeavesTheEventOff) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  Recorder rec({"-m", m.path(), "-e", "sched_switch", "-e", "sched_wakeup", "-o", m.dir() / "rec"});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, 10s)) << rec.Stderr();
  ASSERT_EQ(slurp(m / "sched_switch/enable"), "1\n");
  rec.Stop(SIGKILL);
  EXPECT_TRUE(wait_until([&] { return slurp(m / "sched_switch/enable") == "0\n"; }, 5s))
      << "sched_switch/enable: " << slurp(m / "sched_switch/enable");
  EXPECT_TRUE(wait_until([&] { return slurp(m / "sched_wakeup/enable") == "0\n"; }, 5s));
}

// A user's own enable, from before a recording or made during it, is theirs:
// the recording's end leaves it on.
TEST_F(RecordTest, AUsersOwnEnableStaysOnAfterARecording) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  RunResult r = record({"-m", m.path(), "-e", "sched_switch", "-o", m.dir() / "rec1", "-t", "0.5"});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "1\n") << "the enable from before the recording";
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));

  Recorder rec({"-m", m.path(), "-e", "sched_switch", "-o", m.dir() / "rec2"});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, 10s)) << rec.Stderr();
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  const int st = rec.Stop(SIGINT);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "1\n") << "the enable made during the recording";
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
}

// Item 9 of issue 23: when the recording stops on a full disk, the command
// it was recording is ended (SIGTERM) and reaped, and the line says so.
TEST_F(RecordTest, AFullDiskEndsTheCommandAndSaysSo) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  SmallDisk disk(m.dir() / "small");
  ASSERT_EQ(disk.error, "");
  const std::string small = disk.path;
  const std::string pid_file = m.dir() / "command.pid";
  // A command that would run forever, making system calls all the time.
  RunResult r = record({"-m", m.path(), "-e", "sys_*", "-e", "sched_switch", "-o", small + "/rec", "--", "/bin/sh",
                        "-c", "echo $$ > " + pid_file + "; while :; do : > /dev/null; done"},
                       60s);
  EXPECT_TRUE(OneErrorLine(r, "No space left on device (/bin/sh was ended with SIGTERM)")) << r.describe();
  EXPECT_EQ(r.exit_code(), 1) << r.describe();
  const std::string pid_text = slurp(pid_file);
  ASSERT_FALSE(pid_text.empty() || pid_text.rfind("<read", 0) == 0) << "the command did not start: " << pid_text;
  const pid_t pid = std::stoi(pid_text);
  EXPECT_FALSE(process_alive(pid)) << "the command " << pid << " still runs";
  if (process_alive(pid)) ::kill(pid, SIGKILL);
  for (const auto& e : {"sys_enter", "sys_exit", "sched_switch"})
    EXPECT_EQ(slurp(m / (std::string(e) + "/enable")), "0\n") << e << " was left enabled";
}

// When eventfs stops under a recording, the recorder writes what it read
// and exits 1 with one line.
TEST_F(RecordTest, WhenEventfsStopsTheRecorderKeepsWhatItReadAndExits1) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  const std::string inst = instance_dir(m.instance());
  const std::string out = m.dir() / "rec", done = m.dir() / "written";
  constexpr int kMarkers = 200;
  Recorder rec({"-m", m.path(), "-e", "marker", "-o", out, "--", "/bin/sh", "-c",
                marker_loop(inst + "/trace_marker", 0, kMarkers) + "; : > " + done + "; exec sleep 60"});
  // Every marker taken: by eventfs from the kernel, and by the recorder from eventfs.
  auto all_taken = [&] {
    if (!exists(done) || kernel_unread_entries(inst, cpus) != 0) return false;
    for (int c = 0; c < cpus; ++c)
      if (stat_value(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")), "entries") != 0) return false;
    return true;
  };
  ASSERT_TRUE(wait_until(all_taken, 15s)) << rec.Stderr();
  ASSERT_TRUE(m.SignalAndWait(SIGTERM, 10s).has_value()) << "eventfs did not stop";
  const int st = rec.Wait(15s);
  const std::string err = rec.Stderr();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << "status " << st << "; " << err;
  auto lines = split_lines(err);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_EQ(lines.size(), 1u) << err;
  EXPECT_NE(lines[0].find("ended: eventfs stopped or its mount was taken away"), std::string::npos) << err;
  Babeltrace bt = babeltrace(out);
  ASSERT_EQ(bt.run.exit_code(), 0) << describe(bt);
  std::vector<std::string> odd;
  EXPECT_TRUE(marker_numbers(bt, odd) == numbers_from(0, kMarkers)) << describe(bt);
  EXPECT_TRUE(odd.empty()) << join(odd);
}

}  // namespace
}  // namespace eventfs_it
