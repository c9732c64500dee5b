// eventfs-record -F trace.dat against a real mount, read back by ftrace's own
// tools: libtracecmd's read API (what trace-cmd report uses) record by
// record, `trace-cmd report` itself, and KernelShark's loader (libkshark, what
// its GUI draws). sched_switch of two known threads against a libtraceevent
// reader of a second instance; numbered trace_marker writes, each once, in
// order, with its task and CPU, and the same entries in KernelShark; a loss
// as the pages' missed-events counts and trace-cmd's "EVENTS DROPPED"; bad
// input. Needs root, FUSE, a live tracefs and trace-cmd.

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "support/dat_reader.h"
#include "support/kernel_features.h"
#include "support/markers.h"
#include "support/recorded_markers.h"
#include "support/recorder_run.h"
#include "support/sched_switch.h"
#include "support/stream_fixture.h"
#include "support/stream_reading.h"
#include "support/stream_util.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace stream;

constexpr const char* kTraceCmd = "/usr/bin/trace-cmd";  // scripts/deps.sh installs it
constexpr const char* kKsharkEntries = EVENTFS_KSHARK_ENTRIES;

// Every record of a trace.dat, CPU by CPU, as libtracecmd reads it.
struct DatRead {
  bool opened = false;
  std::vector<dat_record> records;
  std::map<int, std::string> comms;  // of the pids asked for
};

DatRead read_dat(const std::string& path, const std::vector<int>& cpus, const std::vector<pid_t>& pids = {}) {
  DatRead d;
  dat_reader* r = dat_reader_open(path.c_str());
  if (!r) return d;
  d.opened = true;
  for (int cpu : cpus) {
    dat_record rec;
    while (dat_reader_next(r, cpu, &rec)) d.records.push_back(rec);
  }
  for (pid_t p : pids) d.comms[p] = dat_reader_comm(r, p);
  dat_reader_close(r);
  return d;
}

// One entry of KernelShark's loader.
struct KsEntry {
  int cpu = -1;
  long long ts = 0;
  int pid = -1;
  std::string event, task;
};

std::vector<KsEntry> kshark_entries(const std::string& path, RunResult& run) {
  run = eventfs_it::run({kKsharkEntries, path}, scaled(60s));
  std::vector<KsEntry> out;
  for (const auto& line : split_lines(run.out)) {
    std::istringstream is(line);
    KsEntry e;
    if (is >> e.cpu >> e.ts >> e.pid >> e.event >> e.task) out.push_back(e);
  }
  return out;
}

// "prev_comm=X prev_pid=N prev_state=S next_comm=Y next_pid=M" (the format's
// print fmt) -> Switch.
bool switch_of(const dat_record& r, Switch& s) {
  if (std::string(r.name) != "sched_switch" || !parse_switch_info(r.info, s)) return false;
  s.cpu = r.cpu;
  s.common_pid = r.pid;
  return true;
}

std::vector<int> cpu_list(int cpus) {
  std::vector<int> v;
  for (int i = 0; i < cpus; ++i) v.push_back(i);
  return v;
}

class RecordDatTest : public StreamTest {
 protected:
  void SetUp() override {
    StreamTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(exists(kTraceCmd)) << kTraceCmd << " is missing: the recordings cannot be checked";
  }
};

TEST_F(RecordDatTest, SchedSwitchOfTwoKnownThreadsMatchesALibtraceeventReaderInTraceCmdAndKernelShark) {
  MountedEventfs a;
  ASSERT_TRUE(a.Start());
  const int cpus = mount_cpus(a.path());
  ASSERT_GT(cpus, 0);
  RefInstance ref;
  ASSERT_EQ(ref.error(), "");
  ASSERT_TRUE(ResizesRings(ref.path(), "4096"));
  const std::string out = a.dir() / "rec.dat";

  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "1"));
  Recorder rec({"-m", a.path(), "-e", "sched_switch", "-F", "trace.dat", "-o", out});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, 10s)) << rec.Stderr();
  PingPongResult pp = ping_pong(200, test_cpu());
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "0"));
  const int st = rec.Stop(SIGINT);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();
  EXPECT_NE(rec.Stderr().find("pages from"), std::string::npos) << rec.Stderr();
  EXPECT_FALSE(exists(out + ".cpu0")) << "a CPU's pages were left beside the trace.dat";
  // The hold ends with the recorder's close of the enable file, whose
  // release reaches the daemon after the recorder has exited.
  EXPECT_TRUE(wait_until([&] { return slurp(a / "sched_switch/enable") == "0\n"; }, scaled(2s)))
      << "the recorder left the event on: " << slurp(a / "sched_switch/enable");
  ASSERT_EQ(pp.rounds_done, 200);
  SCOPED_TRACE("the recorder said: " + rec.Stderr());

  DatRead dat = read_dat(out, cpu_list(cpus), {pp.ping, pp.pong});
  ASSERT_TRUE(dat.opened) << "libtracecmd cannot open " << out;
  auto ours = [&](const Switch& s) {
    return s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong;
  };
  SwitchCounts recorded, want;
  std::vector<std::string> odd;
  std::vector<unsigned long long> last_ts(static_cast<std::size_t>(cpus), 0);
  for (const auto& r : dat.records) {
    Switch s;
    if (!switch_of(r, s)) {
      if (odd.size() < 10) odd.push_back(std::string("not a sched_switch: ") + r.name + ": " + r.info);
      continue;
    }
    if (r.missed != 0 && odd.size() < 10) odd.push_back("a loss of " + std::to_string(r.missed));
    if (r.ts < last_ts[static_cast<std::size_t>(r.cpu)] && odd.size() < 10)
      odd.push_back("time goes back on CPU " + std::to_string(r.cpu));
    last_ts[static_cast<std::size_t>(r.cpu)] = r.ts;
    if (!ours(s)) continue;
    if (s.common_pid != s.prev_pid && odd.size() < 10)
      odd.push_back("pid " + std::to_string(s.common_pid) + " is not prev_pid " + std::to_string(s.prev_pid));
    ++recorded[key_of(s)];
  }
  EXPECT_TRUE(odd.empty()) << join(odd);
  ReferenceRead reference = read_reference_switches(ref.path(), cpus);
  ASSERT_EQ(reference.error, "");
  ASSERT_EQ(reference.missed, 0) << "the reference instance lost events";
  for (const auto& s : reference.switches)
    if (ours(s)) ++want[key_of(s)];
  int switches = 0;
  for (const auto& [key, n] : recorded) switches += n;
  // 200 rounds: each thread switches out at least once a round.
  EXPECT_GE(switches, 400) << "few switches of the two threads recorded (" << recorded.size() << " kinds; the "
                           << "reference instance has " << reference.switches.size() << " switches of all tasks)";
  int races = 0;
  EXPECT_EQ(compare_instances(recorded, want, kernel_reads_switch_state_per_probe(), &races), "")
      << "the trace.dat differs from the libtraceevent reader of the reference instance; " << rec.Stderr();
  if (races > 0) std::cout << "[   NOTE   ] " << races << " switches with R in one instance and S or D in the other\n";
  // The saved cmdlines name the two tasks.
  EXPECT_EQ(dat.comms[pp.ping], "efs-ping");
  EXPECT_EQ(dat.comms[pp.pong], "efs-pong");

  // trace-cmd report prints every record, the task of each by its name, and
  // the same switches (its lines as trace_pipe's, once its column padding is
  // taken out).
  RunResult report = eventfs_it::run({kTraceCmd, "report", out}, scaled(60s));
  ASSERT_EQ(report.exit_code(), 0) << report.describe().substr(0, 2000);
  std::size_t printed = 0, named = 0;
  SwitchCounts reported;
  std::string unparsed;
  static const std::regex lead("^ +"), around_cpu(" +\\[(\\d+)\\] +"), after_name(": sched_switch: +");
  for (const auto& line : split_lines(report.out)) {
    if (line.find(": sched_switch:") == std::string::npos) continue;
    ++printed;
    if (line.find("efs-ping-" + std::to_string(pp.ping) + " ") != std::string::npos) ++named;
    Switch s;
    std::string plain = std::regex_replace(line, lead, "");
    plain = std::regex_replace(plain, around_cpu, " [$1] ");
    plain = std::regex_replace(plain, after_name, ": sched_switch: ");
    if (!parse_switch_line(plain, s)) {
      if (unparsed.empty()) unparsed = line;
      continue;
    }
    if (ours(s)) ++reported[key_of(s)];
  }
  EXPECT_EQ(printed, dat.records.size());
  EXPECT_GT(named, 50u) << "trace-cmd report does not name efs-ping's records";
  EXPECT_EQ(unparsed, "") << "a line of trace-cmd report that is not a switch";
  EXPECT_EQ(compare_instances(reported, recorded, false), "") << "trace-cmd report prints other switches";

  // KernelShark loads the same entries (its order is time across CPUs).
  RunResult ks;
  std::vector<KsEntry> entries = kshark_entries(out, ks);
  ASSERT_EQ(ks.exit_code(), 0) << ks.describe().substr(0, 2000);
  ASSERT_EQ(entries.size(), dat.records.size());
  std::map<std::tuple<int, long long, int>, int> by_dat, by_ks;
  for (const auto& r : dat.records) ++by_dat[{r.cpu, static_cast<long long>(r.ts), r.pid}];
  for (const auto& e : entries) {
    ++by_ks[{e.cpu, e.ts, e.pid}];
    EXPECT_EQ(e.event, "eventfs/sched_switch");
  }
  EXPECT_TRUE(by_ks == by_dat) << "KernelShark's entries differ from libtracecmd's records";
}

TEST_F(RecordDatTest, EveryMarkerOnceInOrderWithItsTaskAndCpuAlsoInKernelShark) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string out = m.dir() / "rec.dat";
  constexpr int kMarkers = 2000;
  MarkerRecording rec = record_markers(m, {"--format=trace.dat"}, out, cpu, kMarkers);
  ASSERT_EQ(rec.failure, "");
  EXPECT_TRUE(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0) << "status " << rec.status << "; " << rec.err;
  EXPECT_NE(rec.err.find("eventfs-record: " + std::to_string(kMarkers) + " events, 0 lost"), std::string::npos)
      << rec.err;

  DatRead dat = read_dat(out, cpu_list(mount_cpus(m.path())));
  ASSERT_TRUE(dat.opened);
  std::vector<int> seq;
  std::vector<std::string> odd;
  static const std::regex text_re("^text=([\\s\\S]*)$");
  for (const auto& r : dat.records) {
    std::cmatch t;
    const int n = std::regex_match(r.info, t, text_re) ? marker_number(strip_marker_end(t[1], '\n')) : -1;
    if (std::string(r.name) != "marker" || n < 0 || r.cpu != cpu || r.pid != rec.tid) {
      if (odd.size() < 10)
        odd.push_back(std::string(r.name) + " on cpu" + std::to_string(r.cpu) + " pid " + std::to_string(r.pid) + ": " +
                      r.info);
      continue;
    }
    seq.push_back(n);
  }
  EXPECT_TRUE(odd.empty()) << "writer tid " << rec.tid << ": " << join(odd);
  std::vector<int> expected(kMarkers);
  for (int i = 0; i < kMarkers; ++i) expected[i] = i;
  EXPECT_TRUE(seq == expected) << seq.size() << " markers, not m-000000..m-" << kMarkers - 1 << " in order";

  RunResult ks;
  std::vector<KsEntry> entries = kshark_entries(out, ks);
  ASSERT_EQ(ks.exit_code(), 0) << ks.describe().substr(0, 2000);
  ASSERT_EQ(entries.size(), dat.records.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].cpu, dat.records[i].cpu) << i;
    EXPECT_EQ(entries[i].ts, static_cast<long long>(dat.records[i].ts)) << i;
    EXPECT_EQ(entries[i].pid, dat.records[i].pid) << i;
    if (::testing::Test::HasFailure()) break;
  }
}

// A loss while recording (the recorder stopped while a marker storm fills
// eventfs's queue): the pages' missed-events counts add up to the recorder's
// lost count, and trace-cmd report says so.
TEST_F(RecordDatTest, ALossShowsAsMissedEventsAndTraceCmdsEventsDropped) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const int cpu = test_cpu();
  const std::string out = m.dir() / "rec.dat";
  constexpr int kMarkers = 150000;  // more than the queue's 8 MiB of marker records
  MarkerRecording rec = record_marker_storm(m, {"-F", "trace.dat"}, out, cpu, kMarkers);
  ASSERT_EQ(rec.failure, "");
  ASSERT_TRUE(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0) << "status " << rec.status << "; " << rec.err;
  static const std::regex summary("eventfs-record: (\\d+) events, (\\d+) lost");
  std::smatch sm;
  ASSERT_TRUE(std::regex_search(rec.err, sm, summary)) << rec.err;
  const long long events = std::stoll(sm[1]), lost = std::stoll(sm[2]);
  ASSERT_GT(lost, 0) << rec.err;
  EXPECT_EQ(lost, rec.lost) << "the summary's loss is not the mount's";

  DatRead dat = read_dat(out, cpu_list(mount_cpus(m.path())));
  ASSERT_TRUE(dat.opened);
  long long missed = 0, markers = 0;
  for (const auto& r : dat.records) {
    missed += r.missed;
    if (std::string(r.name) == "marker" && r.cpu == cpu) ++markers;
  }
  EXPECT_EQ(markers, events);
  EXPECT_EQ(missed, lost);
  EXPECT_EQ(markers + missed, kMarkers);

  RunResult report = eventfs_it::run({kTraceCmd, "report", out}, scaled(120s));
  ASSERT_EQ(report.exit_code(), 0) << report.describe().substr(0, 2000);
  EXPECT_NE(report.out.find("EVENTS DROPPED"), std::string::npos) << "trace-cmd report shows no loss";
}

TEST_F(RecordDatTest, BadFormatOrAnExistingFileIsOneLineAndLeavesNothingEnabled) {
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  RunResult r = record({"-m", m.path(), "-e", "sched_switch", "-F", "pcap", "-t", "1"});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("-F needs ctf or trace.dat, not 'pcap'"), std::string::npos) << r.describe();
  const std::string existing = m.dir() / "old.dat";
  ASSERT_TRUE(write_text_file(existing, "keep"));
  r = record({"-m", m.path(), "-e", "sched_switch", "-F", "trace.dat", "-o", existing, "-t", "1"});
  EXPECT_TRUE(OneErrorLine(r, existing + " exists"));
  EXPECT_EQ(slurp(existing), "keep");
  EXPECT_FALSE(exists(existing + ".cpu0"));
  EXPECT_EQ(slurp(m / "sched_switch/enable"), "0\n");
}

}  // namespace
}  // namespace eventfs_it
