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
//
// Helpers: support/fault_fixture.h, support/fault_control_load.h.

#include <sys/mman.h>
#include <time.h>
#include <iostream>
#include <new>
#include <random>
#include <string_view>


#include "support/fault_control_load.h"
#include "support/stream_util.h"

namespace eventfs_it {
namespace {

using namespace fault;

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

}  // namespace
}  // namespace eventfs_it
