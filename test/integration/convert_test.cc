// eventfs-convert against recordings trace-cmd makes here: a trace-cmd
// record of sched_switch (in an instance of the test's own, -B), made while
// eventfs-record records the same events from a mount, converted to a
// trace.dat and to CTF, holds the same switches of two known threads as
// eventfs-record's recording, value for value, and trace-cmd report and
// babeltrace2 read the conversions. -l lists what a recording supplies and
// why not the rest; bad input is one line. Needs root, FUSE, a live tracefs,
// trace-cmd and babeltrace2.

#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <set>

#include "support/dat_reader.h"
#include "support/kernel_features.h"
#include "support/recorder_run.h"
#include "support/sched_switch.h"
#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace stream;

constexpr const char* kConvertBinary = EVENTFS_CONVERT_BINARY;
constexpr const char* kTraceCmd = "/usr/bin/trace-cmd";
constexpr const char* kBabeltrace = "/usr/bin/babeltrace2";

RunResult convert(const std::vector<std::string>& args, std::chrono::milliseconds timeout = scaled(60s)) {
  std::vector<std::string> argv{kConvertBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return eventfs_it::run(argv, timeout);
}

// trace-cmd record of `events` into an instance of its own, in the
// background until Stop(); the instance goes with it, also on a failure.
class TraceCmdRecord {
 public:
  TraceCmdRecord(const std::string& out, const std::vector<std::string>& events)
      : instance_("efs-it-tc-" + std::to_string(::getpid())) {
    std::vector<std::string> argv{kTraceCmd, "record", "--no-filter", "-d", "-B", instance_};
    for (const auto& e : events) {
      argv.push_back("-e");
      argv.push_back(e);
    }
    argv.push_back("-o");
    argv.push_back(out);
    err_ = make_capture_fd("trace-cmd-stderr");
    // In the output's directory: with -B, trace-cmd 3.1.6 makes its per-CPU
    // files in its working directory.
    pid_ = spawn(argv, err_, err_, out.substr(0, out.rfind('/')));
  }
  ~TraceCmdRecord() {
    Stop();
    ::rmdir(instance_dir(instance_).c_str());
    if (err_ >= 0) ::close(err_);
  }
  const std::string& instance() const { return instance_; }
  // Recording: its instance's first event is on and tracing in it.
  bool Recording(const std::string& event_dir) const {
    return slurp(instance_dir(instance_) + "/events/" + event_dir + "/enable") == "1\n" &&
           slurp(instance_dir(instance_) + "/tracing_on") == "1\n";
  }
  // Ends it with SIGINT (it writes the file then); whether it ended.
  bool Stop() {
    if (pid_ <= 0) return stopped_;
    ::kill(pid_, SIGINT);
    int st = 0;
    stopped_ = wait_exit(pid_, scaled(30s), st);
    if (!stopped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
    }
    pid_ = -1;
    return stopped_;
  }
  std::string Output() const { return read_capture(err_); }

 private:
  std::string instance_;
  pid_t pid_ = -1;
  int err_ = -1;
  bool stopped_ = false;
};

// The sched_switch records of a trace.dat, as libtracecmd reads them.
bool switch_of(const dat_record& r, Switch& s) {
  if (std::string(r.name) != "sched_switch" || !parse_switch_info(r.info, s)) return false;
  s.cpu = r.cpu;
  s.common_pid = r.pid;
  return true;
}

struct Switches {
  bool opened = false;
  SwitchCounts ours;
  std::size_t records = 0, lost = 0;
  std::vector<std::string> odd;
};

Switches read_switches(const std::string& path, int cpus, const PingPongResult& pp) {
  Switches out;
  dat_reader* r = dat_reader_open(path.c_str());
  if (!r) return out;
  out.opened = true;
  for (int cpu = 0; cpu < cpus; ++cpu) {
    dat_record rec;
    while (dat_reader_next(r, cpu, &rec)) {
      ++out.records;
      out.lost += static_cast<std::size_t>(rec.missed > 0 ? rec.missed : 0);
      Switch s;
      if (!switch_of(rec, s)) {
        if (out.odd.size() < 10) out.odd.push_back(std::string(rec.name) + ": " + rec.info);
        continue;
      }
      if (s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong)
        ++out.ours[key_of(s)];
    }
  }
  dat_reader_close(r);
  return out;
}

// A sched_switch as both readers can print it: CPU, time, pid, then the
// fields as "prev_comm=X prev_pid=N prev_state=S next_comm=Y next_pid=M".
using Printed = std::multiset<std::string>;

// babeltrace2 --clock-cycles lines of sched_switch.
Printed ctf_records(const std::string& out) {
  static const std::regex re(
      "^\\[0*(\\d+)\\] \\([^)]*\\) \\S+ sched_switch: \\{ cpu_id = (\\d+) \\}, \\{ pid = (-?\\d+) \\}, "
      "\\{ prev_comm = \"(.*)\", prev_pid = (-?\\d+), prev_state = \\( \"(\\S)\" : container = \\d+ \\), "
      "next_comm = \"(.*)\", next_pid = (-?\\d+) \\}$");
  Printed p;
  for (const auto& line : split_lines(out)) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      if (!line.empty()) p.insert("unread: " + line);
      continue;
    }
    p.insert("cpu " + m[2].str() + " ts " + m[1].str() + " pid " + m[3].str() + " prev_comm=" + m[4].str() +
             " prev_pid=" + m[5].str() + " prev_state=" + m[6].str() + " next_comm=" + m[7].str() +
             " next_pid=" + m[8].str());
  }
  return p;
}

// The trace.dat's records through libtracecmd.
Printed dat_records(const std::string& path) {
  Printed p;
  dat_reader* r = dat_reader_open(path.c_str());
  if (!r) return p;
  for (int cpu = 0; cpu < 64; ++cpu) {
    dat_record rec;
    while (dat_reader_next(r, cpu, &rec))
      p.insert("cpu " + std::to_string(rec.cpu) + " ts " + std::to_string(rec.ts) + " pid " +
               std::to_string(rec.pid) + " " + rec.info);
  }
  dat_reader_close(r);
  return p;
}

class ConvertTest : public StreamTest {
 protected:
  void SetUp() override {
    StreamTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(exists(kTraceCmd)) << kTraceCmd << " is missing";
    ASSERT_TRUE(exists(kBabeltrace)) << kBabeltrace << " is missing";
  }
};

TEST_F(ConvertTest, ATraceCmdRecordingConvertsToWhatEventfsRecordRecordsValueForValue) {
  MountedEventfs a;
  ASSERT_TRUE(a.Start());
  const int cpus = mount_cpus(a.path());
  ASSERT_GT(cpus, 0);
  const std::string tc_dat = a.dir() / "tc.dat", rec_dat = a.dir() / "rec.dat";
  Recorder rec({"-m", a.path(), "-e", "sched_switch", "-F", "trace.dat", "-o", rec_dat});
  ASSERT_TRUE(wait_until([&] { return rec.Started(); }, scaled(10s))) << rec.Stderr();
  TraceCmdRecord tc(tc_dat, {"sched:sched_switch"});
  ASSERT_TRUE(wait_until([&] { return tc.Recording("sched/sched_switch"); }, scaled(20s))) << tc.Output();
  PingPongResult pp = ping_pong(200, test_cpu());
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(tc.Stop()) << tc.Output();
  const int st = rec.Stop(SIGINT);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "; " << rec.Stderr();
  ASSERT_EQ(pp.rounds_done, 200);
  ASSERT_TRUE(exists(tc_dat)) << tc.Output();

  const std::string conv_dat = a.dir() / "conv.dat", conv_ctf = a.dir() / "conv";
  RunResult c = convert({"-F", "trace.dat", "-o", conv_dat, tc_dat});
  ASSERT_EQ(c.exit_code(), 0) << c.describe();
  EXPECT_NE(c.err.find("stable records of 1 events written to " + conv_dat), std::string::npos) << c.describe();

  Switches converted = read_switches(conv_dat, cpus, pp), recorded = read_switches(rec_dat, cpus, pp);
  ASSERT_TRUE(converted.opened && recorded.opened);
  EXPECT_TRUE(converted.odd.empty()) << join(converted.odd);
  EXPECT_EQ(converted.lost, 0u) << "trace-cmd's recording lost events: the comparison may be off";
  EXPECT_EQ(recorded.lost, 0u);
  int races = 0;
  EXPECT_EQ(compare_instances(converted.ours, recorded.ours, kernel_reads_switch_state_per_probe(), &races), "")
      << "the conversion of trace-cmd's recording differs from eventfs-record's";
  std::size_t n = 0;
  for (const auto& [k, v] : converted.ours) n += static_cast<std::size_t>(v);
  EXPECT_GT(n, 300u);
  if (races > 0) std::cout << "[   NOTE   ] " << races << " switches with R in one instance and S or D in the other\n";

  RunResult report = eventfs_it::run({kTraceCmd, "report", conv_dat}, scaled(60s));
  ASSERT_EQ(report.exit_code(), 0) << report.describe().substr(0, 2000);
  std::size_t printed = 0;
  for (const auto& line : split_lines(report.out))
    if (line.find(": sched_switch:") != std::string::npos) ++printed;
  EXPECT_EQ(printed, converted.records);

  // The same recording as CTF: babeltrace2 prints every record the
  // trace.dat conversion holds, the same CPU, time, task and values.
  c = convert({"-e", "sched_switch", "-o", conv_ctf, tc_dat});
  ASSERT_EQ(c.exit_code(), 0) << c.describe();
  RunResult bt = eventfs_it::run({kBabeltrace, "--clock-cycles", conv_ctf}, scaled(60s));
  ASSERT_EQ(bt.exit_code(), 0) << bt.describe().substr(0, 2000);
  EXPECT_EQ(ctf_records(bt.out), dat_records(conv_dat)) << "babeltrace2's records differ from trace-cmd's reader's";
}

TEST_F(ConvertTest, ListsWhatARecordingSuppliesAndBadInputIsOneLine) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string tc_dat = dir / "tc.dat";
  {
    TraceCmdRecord tc(tc_dat, {"sched:sched_switch", "sched:sched_wakeup"});
    ASSERT_TRUE(wait_until([&] { return tc.Recording("sched/sched_switch"); }, scaled(20s))) << tc.Output();
    ASSERT_TRUE(tc.Stop()) << tc.Output();
  }
  RunResult l = convert({"-l", tc_dat});
  ASSERT_EQ(l.exit_code(), 0) << l.describe();
  auto lines = split_lines(l.out);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "sched_switch"), lines.end()) << l.out;
  EXPECT_NE(std::find(lines.begin(), lines.end(), "sched_wakeup"), lines.end()) << l.out;
  EXPECT_NE(l.out.find("\nsys_enter: "), std::string::npos) << "no reason for an event it cannot supply: " << l.out;

  RunResult r = convert({"-e", "sys_enter", "-o", dir / "x", tc_dat});
  EXPECT_TRUE(OneErrorLine(r, "sys_enter: the recording cannot supply it", "eventfs-convert")) << r.describe();
  ASSERT_TRUE(write_text_file(dir / "not.dat", "hello"));
  r = convert({"-o", dir / "y", dir / "not.dat"});
  EXPECT_TRUE(OneErrorLine(r, "not a trace.dat this reads", "eventfs-convert")) << r.describe();
  r = convert({"-o", dir / "z", dir / "missing.dat"});
  EXPECT_TRUE(OneErrorLine(r, "cannot open", "eventfs-convert")) << r.describe();
  r = convert({tc_dat});
  EXPECT_EQ(r.exit_code(), 2) << r.describe();
  EXPECT_NE(r.err.find("no output given (-o OUT)"), std::string::npos) << r.describe();
  EXPECT_FALSE(exists(dir / "x"));
}

}  // namespace
}  // namespace eventfs_it
