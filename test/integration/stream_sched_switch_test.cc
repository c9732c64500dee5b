// sched_switch through trace_pipe and per_cpu/cpuN/trace_pipe_raw, compared with
// a second tracefs instance of the test's own decoded with libtraceevent (kbuffer +
// tep): the same switches of two known threads. Needs root, FUSE and a live tracefs;
// the top-level instance is never touched (checked after each test).

#include <sys/epoll.h>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/kernel_features.h"
#include "support/sched_switch.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamSchedSwitch : public StreamTest, public ::testing::WithParamInterface<Via> {};

TEST_P(StreamSchedSwitch, SwitchesOfTwoKnownThreadsMatchALibtraceeventReaderOfASecondInstance) {
  const Via via = GetParam();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const int cpus = mount_cpus(m.path());
  ASSERT_GT(cpus, 0);
  const unsigned id = event_id(m, "sched_switch");
  ASSERT_EQ(id, 1u) << "the default catalog's sched_switch id";
  RefInstance ref;
  ASSERT_EQ(ref.error(), "");
  // Room for every switch of the whole machine while the test runs.
  ASSERT_TRUE(ResizesRings(ref.path(), "4096"));

  Collector col(stream_paths(m, via, cpus), via == Via::Raw);
  ASSERT_TRUE(col.Start());
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "1"));
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "1", m / "error_log"));
  // The threads live only while both instances record.
  const int cpu = test_cpu();
  PingPongResult pp = ping_pong(200, cpu);
  std::this_thread::sleep_for(50ms);  // a thread's last switch may come after join()
  ASSERT_TRUE(Writes(m / "sched_switch/enable", "0", m / "error_log"));
  ASSERT_TRUE(Writes(ref / "events/sched/sched_switch/enable", "0"));
  ASSERT_EQ(pp.rounds_done, 200);
  ASSERT_GT(pp.ping, 0);
  ASSERT_GT(pp.pong, 0);
  EXPECT_TRUE(col.WaitQuiet(500ms, 10s)) << "the stream kept delivering after sched_switch was disabled";
  col.Stop();
  auto problems = col.Problems();
  EXPECT_TRUE(problems.empty()) << join(problems);

  auto ours = [&](const Switch& s) {
    return s.prev_pid == pp.ping || s.prev_pid == pp.pong || s.next_pid == pp.ping || s.next_pid == pp.pong;
  };
  SwitchCounts got, want;
  std::size_t got_n = 0, want_n = 0, all_records = 0, lost = 0, tasks_named = 0;
  std::vector<std::string> odd;
  if (via == Via::Text) {
    for (const auto& line : col.Lines()) {
      Switch s;
      if (line.rfind("CPU:", 0) == 0 && line.find("[LOST") != std::string::npos) {
        ++lost;
      } else if (!parse_switch_line(line, s)) {
        if (odd.size() < 10) odd.push_back("unparsable line: " + line);
      } else {
        ++all_records;
        if (!ours(s)) continue;
        // The pid column is the raw record's common_pid: the task switched out.
        if (s.common_pid != s.prev_pid && odd.size() < 10)
          odd.push_back("pid column " + std::to_string(s.common_pid) + " is not prev_pid: " + line);
        // The task column names the task switched out by a name it had, as
        // tracefs prints saved_cmdlines: prev_comm, the name the thread gave
        // itself after a switch it made still under its parent's name, or, for
        // a thread gone before its line was read, its parent's name where the
        // kernel's table kept that one (it saves names lazily, and not while
        // the table is being read). The idle task is `<idle>`, as tracefs
        // prints it.
        if (s.task != "<...>" && !(s.prev_pid == 0 && s.task == "<idle>")) {
          ++tasks_named;
          const std::string renamed = s.prev_pid == pp.ping ? "efs-ping" : s.prev_pid == pp.pong ? "efs-pong" : "";
          if (s.task != s.prev_comm && s.task != renamed && s.task != pp.parent_comm && odd.size() < 10)
            odd.push_back("task column is not a name the task had: " + line);
        }
        ++got[key_of(s)];
        ++got_n;
      }
    }
  } else {
    for (const auto& r : col.Records()) {
      if (r.header.id == EVENTFS_ID_LOST) {
        ++lost;
        continue;
      }
      Switch s;
      if (r.header.id != id || !parse_switch_payload(r.payload, s)) {
        if (odd.size() < 10)
          odd.push_back("record of id " + std::to_string(r.header.id) + " size " + std::to_string(r.header.size));
        continue;
      }
      if (r.header.size != EVENTFS_RECORD_SIZE(44) && odd.size() < 10)
        odd.push_back("a sched_switch record of size " + std::to_string(r.header.size));
      ++all_records;
      s.cpu = static_cast<int>(r.stream);
      if (!ours(s)) continue;
      // The header's pid is the raw record's common_pid: the task switched out.
      if (r.header.pid != s.prev_pid && odd.size() < 10)
        odd.push_back("header pid " + std::to_string(r.header.pid) + " is not prev_pid " + std::to_string(s.prev_pid));
      if (r.header.version != EVENTFS_RECORD_VERSION && odd.size() < 10)
        odd.push_back("header version " + std::to_string(r.header.version));
      ++got[key_of(s)];
      ++got_n;
    }
  }
  EXPECT_EQ(lost, 0u) << "eventfs reported lost events: the comparison below may be off";
  if (via == Via::Text) {
    // Most lines name their task, where the kernel's saved_cmdlines names
    // either thread now (where it names neither, tracefs prints "<...>" too).
    const std::string table = "\n" + slurp("/sys/kernel/tracing/saved_cmdlines");
    const bool kernel_names = table.find("\n" + std::to_string(pp.ping) + " ") != std::string::npos ||
                              table.find("\n" + std::to_string(pp.pong) + " ") != std::string::npos;
    if (kernel_names)
      EXPECT_GT(tasks_named, got_n / 2) << "most lines of the two threads name their task";
    else if (tasks_named <= got_n / 2)
      std::cout << "[   NOTE   ] " << tasks_named << " of " << got_n
                << " lines named their task; the kernel's saved_cmdlines names neither thread\n";
  }
  EXPECT_TRUE(odd.empty()) << join(odd);

  ReferenceRead reference = read_reference_switches(ref.path(), cpus);
  ASSERT_EQ(reference.error, "");
  ASSERT_EQ(reference.missed, 0) << "the reference instance lost events: no comparison possible";
  for (const auto& s : reference.switches)
    if (ours(s)) {
      ++want[key_of(s)];
      ++want_n;
    }
  std::ostringstream ctx;
  ctx << "ping " << pp.ping << ", pong " << pp.pong << " on cpu" << cpu << "; eventfs: " << got_n << " of "
      << all_records << " switches; reference: " << want_n << " of " << reference.switches.size() << " in "
      << reference.subbufs << " sub-buffers";
  if (got_n != want_n) {  // where eventfs's records went: its stats, the instance's, the daemon's stderr
    std::ostringstream dump;
    const std::string inst = instance_dir(m.instance());
    for (int c = 0; c < cpus; ++c) {
      const std::string per_cpu = "per_cpu/cpu" + std::to_string(c) + "/stats";
      dump << "\n--- " << per_cpu << ":\n" << slurp(m / per_cpu) << "--- instance " << per_cpu << ":\n"
           << slurp(inst + "/" + per_cpu);
    }
    dump << "--- instance buffer_size_kb: " << slurp(inst + "/buffer_size_kb")
         << "--- instance sched_switch/enable: " << slurp(inst + "/events/sched/sched_switch/enable")
         << "--- daemon stderr:\n" << m.Stderr();
    ADD_FAILURE() << "eventfs gave " << got_n << " of the " << want_n << " switches; " << ctx.str() << dump.str();
  }
  EXPECT_GT(want_n, 100u) << ctx.str();
  EXPECT_GT(got_n, 100u) << ctx.str();
  EXPECT_EQ(got_n, want_n) << ctx.str();
  int state_races = 0;
  const std::string differences = compare_instances(got, want, kernel_reads_switch_state_per_probe(), &state_races);
  EXPECT_EQ(differences, "") << ctx.str();
  if (state_races > 0)
    std::cout << "[   NOTE   ] " << state_races << " switches with R in one instance and S or D in the other "
              << "(this kernel reads the state in each instance's probe)\n";
  // Both threads were seen under their own names, in both directions.
  std::size_t named = 0;
  for (const auto& [k, n] : got)
    if (std::get<2>(k) == "efs-ping" && std::get<5>(k) == "efs-pong") named += static_cast<std::size_t>(n);
  EXPECT_GT(named, 50u) << "few direct efs-ping -> efs-pong switches; " << ctx.str();
}

INSTANTIATE_TEST_SUITE_P(Streams, StreamSchedSwitch, ::testing::Values(Via::Text, Via::Raw),
                         [](const auto& info) { return info.param == Via::Text ? "TracePipe" : "PerCpuRaw"; });

// ---------------------------------------------------------------------------
// 2. trace_marker records through a test catalog event, with both readers.

}  // namespace
}  // namespace eventfs_it
