// Faults and concurrency on the real kernel (needs root, FUSE and a live
// tracefs; every mount has a tracefs instance of its own):
//
// SIGTERM and SIGKILL of the daemon at seeded random points under stream load:
// every reader returns; after SIGTERM the instance is gone, after SIGKILL the next
// daemon reclaims it clean. EVENTFS_FAULT_SEED=N repeats a run's random choices.

#include <sys/mman.h>
#include <time.h>
#include <iostream>
#include <new>
#include <random>
#include <string_view>


#include "support/fault_stream_load.h"
#include "support/stream_util.h"
#include "support/children.h"
#include "support/markers.h"

namespace eventfs_it {
namespace {

using namespace fault;

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
