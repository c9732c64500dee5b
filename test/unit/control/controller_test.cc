// The control translation against an in-memory instance: what reaches the
// kernel for each accepted write, what reads back, and that refusals change
// nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <regex>
#include <thread>

#include "support/refused_writes.h"
#include "control/controller.h"
#include "control/error_log.h"
#include "control/trigger.h"
#include "support/fake_instance.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

using testing::FakeInstance;
using testing::ResolvedFixture;

constexpr const char* kSwitch = "events/sched/sched_switch";

bool wait_until_true(const std::atomic<bool>& flag) {
  for (int i = 0; i < 2000 && !flag; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag;
}

// A second stable event over sched_switch, with renamed fields.
Catalog catalog_with_extra() {
  return testing::builtin_catalog_with("STABLE_EVENT(task_switch, sched:sched_switch, id=900,\n"
                                       " __field(pid_t, from) = prev_pid\n __field(pid_t, to) = next_pid\n"
                                       " __field(char, state) = task_state(prev_state))",
                                       "extra.catalog");
}

class ControllerTest : public ::testing::Test {
 protected:
  ControllerTest() : fx("linux-6.18", catalog_with_extra()), ctl(fake, *fx.tracefs, fx.resolution) {}

  std::size_t index(const std::string& name) const {
    for (std::size_t i = 0; i < fx.resolution.available.size(); ++i)
      if (fx.resolution.available[i].event->name == name) return i;
    throw std::runtime_error("no event " + name);
  }
  std::string read(int (Controller::*fn)(const ControlEvent&, std::string&), const std::string& ev) {
    std::string out;
    EXPECT_EQ((ctl.*fn)(index(ev), out), 0);
    return out;
  }

  FakeInstance fake;
  ResolvedFixture fx;
  Controller ctl;
};

TEST_F(ControllerTest, AvailableTriggersComeFromTheKernel) {
  EXPECT_EQ(ctl.available_triggers(),
            (std::vector<std::string>{"traceon", "traceoff", "stacktrace", "enable_event", "disable_event"}));
}

TEST_F(ControllerTest, EnableIsReferenceCountedOverOneRawEvent) {
  std::size_t a = index("sched_switch"), b = index("task_switch");
  ASSERT_EQ(ctl.write_enable(a, "1\n"), 0);
  EXPECT_TRUE(fake.enabled(kSwitch));
  ASSERT_EQ(ctl.write_enable(b, "1"), 0);
  ASSERT_EQ(ctl.write_enable(a, "0\n"), 0);
  EXPECT_TRUE(fake.enabled(kSwitch)) << "task_switch still uses it";
  EXPECT_EQ(read(&Controller::read_enable, "sched_switch"), "0\n");
  EXPECT_EQ(read(&Controller::read_enable, "task_switch"), "1\n");
  ASSERT_EQ(ctl.write_enable(b, "0"), 0);
  EXPECT_FALSE(fake.enabled(kSwitch));
  ASSERT_EQ(ctl.write_enable(b, "0"), 0);  // disabling twice is not an error, as in tracefs
}

TEST_F(ControllerTest, AHeldEnableLastsUntilItsHoldGoes) {
  std::size_t a = index("sched_switch"), b = index("task_switch");
  Controller::Hold first, second;
  EXPECT_EQ(ctl.write_enable(a, "hold"), EINVAL) << "a hold needs an open file to last as long as";
  ASSERT_EQ(ctl.write_enable(a, "hold\n", &first), 0);
  ASSERT_TRUE(first);
  EXPECT_TRUE(fake.enabled(kSwitch));
  EXPECT_EQ(read(&Controller::read_enable, "sched_switch"), "1\n");
  EXPECT_EQ(read(&Controller::read_enable, "task_switch"), "0\n") << "another stable event's hold is not its own";
  ASSERT_EQ(ctl.write_enable(a, "hold", &first), 0);  // the same open: the same hold
  ASSERT_EQ(ctl.write_enable(b, "hold", &second), 0);
  ASSERT_EQ(ctl.write_enable(a, "0"), 0);  // the plain setting leaves the holds alone
  EXPECT_EQ(read(&Controller::read_enable, "sched_switch"), "1\n");
  first.reset();
  EXPECT_TRUE(fake.enabled(kSwitch)) << "task_switch's hold still uses it";
  EXPECT_EQ(read(&Controller::read_enable, "sched_switch"), "0\n");
  second.reset();
  EXPECT_FALSE(fake.enabled(kSwitch));
  EXPECT_NE(ctl.error_log().text().find("hold needs an open file to last as long as"), std::string::npos)
      << ctl.error_log().text();
}

TEST_F(ControllerTest, EnableShowsTheKernelsSoftModeWhenATriggerArmsIt) {
  ASSERT_EQ(ctl.write_trigger(index("sched_switch"), "enable_event:sched_wakeup\n"), 0);
  EXPECT_EQ(read(&Controller::read_enable, "sched_wakeup"), "0*\n");
}

// The streams carry what the enable files say: a stable event is wanted
// when its own enable is set or a trigger arms it, not when its raw event is
// on for another stable event or through raw/. With its raw event off
// altogether it stays wanted (the ring holds only records from when it was on).
TEST_F(ControllerTest, WantedEventsFollowTheEnableFiles) {
  WantedEvents wanted(fx.resolution.available.size());
  Controller c(fake, *fx.tracefs, fx.resolution, &wanted);
  std::size_t a = index("sched_switch"), b = index("task_switch"), w = index("sched_wakeup");
  EXPECT_TRUE(wanted.wanted(a)) << "nothing records sched_switch";
  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_switch"}, "1"), 0);
  EXPECT_FALSE(wanted.wanted(a)) << "raw/ enable made a stable event wanted";
  EXPECT_FALSE(wanted.wanted(b));
  ASSERT_EQ(c.write_enable(b, "1"), 0);
  EXPECT_TRUE(wanted.wanted(b));
  EXPECT_FALSE(wanted.wanted(a)) << "task_switch's enable made sched_switch wanted";
  EXPECT_EQ(c.write_enable(b, "2"), EINVAL);
  EXPECT_TRUE(wanted.wanted(b)) << "a refused write changed it";
  ASSERT_EQ(c.write_enable(b, "0"), 0);
  EXPECT_FALSE(wanted.wanted(b)) << "raw/ still records sched_switch";
  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_switch"}, "0"), 0);
  EXPECT_TRUE(wanted.wanted(a));
  EXPECT_TRUE(wanted.wanted(b));

  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_wakeup"}, "1"), 0);
  EXPECT_FALSE(wanted.wanted(w));
  ASSERT_EQ(c.write_trigger(a, "enable_event:sched_wakeup"), 0);
  EXPECT_TRUE(wanted.wanted(w)) << "armed by a trigger (enable reads 1*)";
  ASSERT_EQ(c.write_trigger(a, "!enable_event:sched_wakeup"), 0);
  EXPECT_FALSE(wanted.wanted(w));
  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_wakeup"}, "0"), 0);
}

TEST_F(ControllerTest, FiltersAreRenamedBothWays) {
  ASSERT_EQ(ctl.write_filter(index("task_switch"), "from == 1 && to != 2\n"), 0);
  EXPECT_EQ(fake.filter(kSwitch), "prev_pid == 1 && next_pid != 2");
  EXPECT_EQ(read(&Controller::read_filter, "task_switch"), "from == 1 && to != 2\n");
  // The same raw filter seen through the other stable event, in its names.
  EXPECT_EQ(read(&Controller::read_filter, "sched_switch"), "prev_pid == 1 && next_pid != 2\n");
  ASSERT_EQ(ctl.write_filter(index("task_switch"), "0\n"), 0);
  EXPECT_EQ(fake.filter(kSwitch), "");
  EXPECT_EQ(read(&Controller::read_filter, "task_switch"), "none\n");
}

TEST_F(ControllerTest, TaskStateLettersBecomeBitTestsFromTheKernelsTable) {
  struct {
    const char* stable;
    const char* raw;
  } cases[] = {
      {"state == 'S'", "(prev_state & 1)"},
      {"state == \"D\"", "(prev_state & 2 && !(prev_state & 1))"},
      {"state != 'D'", "!(prev_state & 2 && !(prev_state & 1))"},
      {"state == R", "!(prev_state & 255)"},
      {"state != 'R'", "(prev_state & 255)"},
      {"from == 1 && (state == 'Z' || state == 'X')",
       "prev_pid == 1 && ((prev_state & 32 && !(prev_state & 31)) || (prev_state & 16 && !(prev_state & 15)))"},
  };
  for (const auto& c : cases) {
    ASSERT_EQ(ctl.write_filter(index("task_switch"), c.stable), 0) << c.stable << "\n" << ctl.error_log().text();
    EXPECT_EQ(fake.filter(kSwitch), c.raw) << c.stable;
    EXPECT_EQ(read(&Controller::read_filter, "task_switch"), std::string(c.stable) + "\n");
  }
}

TEST_F(ControllerTest, TriggersAreTranslatedAndReadBackInStableNames) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "enable_event:sched_migrate_task if prev_pid == 1\n"), 0);
  ASSERT_EQ(ctl.write_trigger(sw, "traceoff:5 if prev_state == 'S'"), 0);
  EXPECT_EQ(fake.triggers(kSwitch),
            (std::vector<std::string>{"enable_event:sched:sched_migrate_task:unlimited if prev_pid == 1",
                                      "traceoff:count=5 if (prev_state & 1)"}));
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"),
            "traceoff:count=5 if prev_state == 'S'\n"
            "enable_event:sched_migrate_task:unlimited if prev_pid == 1\n");
  ASSERT_EQ(ctl.write_trigger(sw, "!traceoff"), 0);
  ASSERT_EQ(ctl.write_trigger(sw, "!enable_event:sched_migrate_task"), 0);
  EXPECT_TRUE(fake.triggers(kSwitch).empty());
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"), FakeInstance::kHeader);
}

TEST_F(ControllerTest, TriggerFiltersUseTheStableNamesOfTheirOwnEvent) {
  ASSERT_EQ(ctl.write_trigger(index("task_switch"), "stacktrace if from == 7 && state == 'D'"), 0);
  EXPECT_EQ(fake.triggers(kSwitch),
            (std::vector<std::string>{"stacktrace:unlimited if prev_pid == 7 && (prev_state & 2 && !(prev_state & 1))"}));
  EXPECT_EQ(read(&Controller::read_trigger, "task_switch"), "stacktrace:unlimited if from == 7 && state == 'D'\n");
}

TEST_F(ControllerTest, GlobsExpandToOneKernelTriggerPerEventAndAreRemovedTogether) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_*"), 0);
  auto t = fake.triggers(kSwitch);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], "enable_event:sched:sched_process_fork:unlimited");
  EXPECT_EQ(t[1], "enable_event:sched:sched_process_exec:unlimited");
  EXPECT_EQ(t[2], "enable_event:sched:sched_process_exit:unlimited");
  ASSERT_EQ(ctl.write_trigger(sw, "!enable_event:sched_process_*"), 0);
  EXPECT_TRUE(fake.triggers(kSwitch).empty());
}

TEST_F(ControllerTest, AKernelRefusalInTheMiddleOfAGlobUndoesTheRest) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_exec"), 0);
  // fork goes in, exec is a duplicate (EEXIST), so fork must come out again.
  EXPECT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_*"), EEXIST);
  EXPECT_EQ(fake.triggers(kSwitch), std::vector<std::string>{"enable_event:sched:sched_process_exec:unlimited"});
  EXPECT_NE(ctl.error_log().text().find("File exists"), std::string::npos) << ctl.error_log().text();
}

TEST_F(ControllerTest, ADuplicateInAGlobIsRefusedBeforeAnythingIsArmed) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_exec"), 0);
  int writes_before = fake.writes;
  EXPECT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_*"), EEXIST);
  EXPECT_EQ(fake.writes, writes_before) << "a trigger was armed before the duplicate was found";
  EXPECT_NE(ctl.error_log().text().find("'enable_event:sched_process_exec:unlimited' is set already"), std::string::npos)
      << ctl.error_log().text();
  // traceon and traceoff are one kind for the kernel: a second is a duplicate too.
  ASSERT_EQ(ctl.write_trigger(sw, "traceon if prev_pid == 1"), 0);
  writes_before = fake.writes;
  EXPECT_EQ(ctl.write_trigger(sw, "traceoff"), EEXIST);
  EXPECT_EQ(fake.writes, writes_before);
}

// A trigger armed by the first part of a glob can fire before the kernel
// refuses a later part: its target is left on when the trigger is removed.
// The refusal puts every target's enable back as it was.
TEST_F(ControllerTest, ARefusalAfterArmedTriggersFiredPutsTheirTargetsBack) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(index("sched_process_exit"), "enable_event:sched_process_exec"), 0);
  fake.fail_after = 2;  // fork and exec armed, exit refused
  fake.fire_before_failing = kSwitch;
  EXPECT_EQ(ctl.write_trigger(sw, "enable_event:sched_process_*"), ENOMEM);
  EXPECT_TRUE(fake.triggers(kSwitch).empty());
  EXPECT_FALSE(fake.enabled("events/sched/sched_process_fork"));
  EXPECT_FALSE(fake.enabled("events/sched/sched_process_exec"));
  EXPECT_EQ(read(&Controller::read_enable, "sched_process_fork"), "0\n");
  // The other trigger that holds exec is untouched, and exec is still its.
  EXPECT_EQ(fake.triggers("events/sched/sched_process_exit"),
            std::vector<std::string>{"enable_event:sched:sched_process_exec:unlimited"});
  EXPECT_EQ(read(&Controller::read_enable, "sched_process_exec"), "0*\n");
}

// Reads of control files never wait for another event's write, even one the
// kernel is slow to take; a read of the event being written waits for the
// write (which may show the kernel a state it then undoes).
// The kernel starts recording when its enable is written: by then the
// stable events that do not want those records must already say so, or the
// drainers stream what comes meanwhile (found by the kernel matrix under
// qemu, where a context switch falls between the two).
TEST_F(ControllerTest, WhoWantsTheRecordsIsPublishedBeforeTheKernelRecordsThem) {
  WantedEvents wanted(fx.resolution.available.size());
  Controller c(fake, *fx.tracefs, fx.resolution, &wanted);
  std::size_t a = index("sched_switch"), b = index("task_switch");
  std::vector<std::pair<bool, bool>> at_enable;  // (a, b) wanted as the kernel's enable is written
  fake.before_write = [&](const std::string& rel) {
    if (rel == std::string(kSwitch) + "/enable") at_enable.emplace_back(wanted.wanted(a), wanted.wanted(b));
  };
  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_switch"}, "1"), 0);
  ASSERT_EQ(at_enable.size(), 1u);
  EXPECT_FALSE(at_enable[0].first) << "sched_switch still wanted when the raw enable reached the kernel";
  EXPECT_FALSE(at_enable[0].second) << "task_switch still wanted when the raw enable reached the kernel";
  ASSERT_EQ(c.write_enable(EventName{"sched", "sched_switch"}, "0"), 0);
  at_enable.clear();
  ASSERT_EQ(c.write_enable(b, "1"), 0);
  ASSERT_EQ(at_enable.size(), 1u);
  EXPECT_FALSE(at_enable[0].first) << "sched_switch still wanted when task_switch's enable reached the kernel";
  EXPECT_TRUE(at_enable[0].second);
  ASSERT_EQ(c.write_enable(b, "0"), 0);
}

TEST_F(ControllerTest, TheEventLockMapKeepsOnlyTheLocksInUse) {
  EXPECT_EQ(ctl.event_locks_in_use(), 0u);
  std::string out;
  for (std::size_t i = 0; i < fx.resolution.available.size(); ++i) {
    (void)ctl.write_enable(i, "1");
    (void)ctl.read_enable(i, out);
    (void)ctl.write_filter(i, "common_pid != 1");
    (void)ctl.read_filter(i, out);
    (void)ctl.write_trigger(i, "traceoff");
    (void)ctl.read_trigger(i, out);
    (void)ctl.write_enable(i, "0");
  }
  for (const auto& sys : fx.tracefs->systems())
    for (const auto& ev : fx.tracefs->events(sys)) {
      (void)ctl.write_enable(EventName{sys, ev}, "1");
      (void)ctl.read_enable(EventName{sys, ev}, out);
    }
  EXPECT_EQ(ctl.write_trigger(index("sched_switch"), "enable_event:sched_*"), 0) << ctl.error_log().text();
  EXPECT_EQ(ctl.event_locks_in_use(), 0u) << "locks of events no write holds are kept";
  // Writers that wait for one event's lock keep it; it goes with the last.
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<bool> in_write{false};
  fake.before_write = [&](const std::string& rel) {
    if (rel != std::string(kSwitch) + "/filter") return;
    in_write = true;
    std::lock_guard wait(gate);
  };
  auto first = std::async(std::launch::async, [&] { return ctl.write_filter(index("sched_switch"), "prev_pid == 1"); });
  ASSERT_TRUE(wait_until_true(in_write));
  auto second = std::async(std::launch::async, [&] { return ctl.read_filter(index("sched_switch"), out); });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(ctl.event_locks_in_use(), 1u);
  closed.unlock();
  EXPECT_EQ(first.get(), 0);
  EXPECT_EQ(second.get(), 0);
  EXPECT_EQ(ctl.event_locks_in_use(), 0u);
}

TEST_F(ControllerTest, AStuckKernelWriteHoldsUpNoReadOfAnotherEvent) {
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<bool> in_write{false};
  fake.before_write = [&](const std::string& rel) {
    if (rel != std::string(kSwitch) + "/trigger") return;
    in_write = true;
    std::lock_guard wait(gate);
  };
  auto stuck = std::async(std::launch::async, [&] { return ctl.write_trigger(index("sched_switch"), "traceoff"); });
  ASSERT_TRUE(wait_until_true(in_write));
  auto reads = std::async(std::launch::async, [&] {
    std::string out;
    int e = 0;
    for (const char* ev : {"sched_wakeup", "irq_handler_entry"}) {
      e |= ctl.read_enable(index(ev), out);
      e |= ctl.read_filter(index(ev), out);
      e |= ctl.read_trigger(index(ev), out);
    }
    e |= ctl.read_trigger(EventName{"sched", "sched_wakeup"}, out);
    return e;
  });
  auto same = std::async(std::launch::async, [&] {
    std::string out;
    return ctl.read_trigger(index("sched_switch"), out) == 0 ? out : "error";
  });
  bool done = reads.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  bool same_waited = same.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  closed.unlock();  // let the write finish either way
  EXPECT_TRUE(done) << "a read of another event waited for the write";
  EXPECT_TRUE(same_waited) << "a read of the event being written did not wait for the write";
  EXPECT_EQ(reads.get(), 0);
  EXPECT_EQ(stuck.get(), 0);
  EXPECT_EQ(same.get(), "traceoff:unlimited\n") << "the read saw the event before the write";
}

// A long glob (a kernel write per target, each slow) does not hold up writes
// to events it does not touch: they take turns with its writes.
TEST_F(ControllerTest, ALongGlobHoldsUpNoWriteToAnotherEvent) {
  const std::string trigger = std::string(kSwitch) + "/trigger";
  std::atomic<int> glob_writes{0};
  fake.before_write = [&](const std::string& rel) {
    if (rel != trigger) return;
    ++glob_writes;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  auto glob = std::async(std::launch::async, [&] { return ctl.write_trigger(EventName{"sched", "sched_switch"}, "enable_event:sched:*"); });
  for (int i = 0; i < 2000 && glob_writes == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GT(glob_writes.load(), 0);
  std::size_t irq = index("irq_handler_entry");
  EXPECT_EQ(ctl.write_enable(irq, "1"), 0);
  EXPECT_EQ(ctl.write_filter(irq, "irq == 1"), 0);
  EXPECT_EQ(ctl.write_trigger(irq, "stacktrace"), 0);
  EXPECT_EQ(glob.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the other event's writes waited for the whole glob (" << glob_writes << " kernel writes)";
  EXPECT_EQ(glob.get(), 0);
  EXPECT_GE(glob_writes.load(), 5);
  EXPECT_TRUE(fake.enabled("events/irq/irq_handler_entry"));
}

TEST_F(ControllerTest, AFilterTheKernelRefusesLeavesThePreviousOne) {
  ASSERT_EQ(ctl.write_filter(index("task_switch"), "from == 3"), 0);
  EXPECT_EQ(ctl.write_filter(index("task_switch"), "from == bogus"), EINVAL);
  EXPECT_EQ(fake.filter(kSwitch), "prev_pid == 3");
  EXPECT_EQ(read(&Controller::read_filter, "task_switch"), "from == 3\n");
  ASSERT_EQ(ctl.write_filter(index("task_switch"), "0"), 0);
  EXPECT_EQ(ctl.write_filter(index("task_switch"), "from == bogus"), EINVAL);
  EXPECT_EQ(fake.filter(kSwitch), "") << "no filter before, none after";
}

TEST_F(ControllerTest, TriggerReadBackUsesTheReadersOwnNames) {
  ASSERT_EQ(ctl.write_trigger(index("task_switch"), "enable_event:sched_wakeup if to == 5"), 0);
  EXPECT_EQ(read(&Controller::read_trigger, "task_switch"), "enable_event:sched_wakeup:unlimited if to == 5\n");
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"),
            "enable_event:sched_wakeup:unlimited if next_pid == 5\n");
}

TEST_F(ControllerTest, KernelErrorLogEntriesAreRewrittenIntoStableNames) {
  // The fake kernel refuses any filter containing "bogus" and logs where.
  EXPECT_EQ(ctl.write_filter(index("task_switch"), "state == 'S' || from == bogus"), EINVAL);
  std::string log = ctl.error_log().text();
  EXPECT_NE(log.find("task_switch/filter: error: Field not found"), std::string::npos) << log;
  EXPECT_NE(log.find("  Command: state == 'S' || from == bogus\n"), std::string::npos) << log;
  // The caret points at "bogus" in the stable text, not in the raw one.
  std::string caret_line = log.substr(log.find("bogus\n") + 6);
  EXPECT_EQ(caret_line.find('^'), 11 + std::string("state == 'S' || from == ").size()) << log;
  auto raw = fake.read("error_log");
  ASSERT_TRUE(raw) << raw.reason();
  EXPECT_EQ(*raw, "") << "the instance's own log is consumed";
}

// A failure no write caused (a stream's ring buffer could not be read) is
// its first line alone: no Command line and caret, which would show an
// empty command. Write errors keep them.
TEST(ErrorLog, AFailureNoWriteCausedHasNoCommandLine) {
  ErrorLog log;
  log.add("sched_switch/filter", "Field not found", "", 0);
  log.add_failure("trace_pipe", "cannot read the ring buffer of CPU 1: Input/output error");
  const std::string text = log.text();
  const std::regex layout(
      "\\[ *[0-9]+\\.[0-9]{6}\\] sched_switch/filter: error: Field not found\n"
      "  Command: \n"
      "           \\^\n"
      "\\[ *[0-9]+\\.[0-9]{6}\\] trace_pipe: error: cannot read the ring buffer of CPU 1: Input/output error\n");
  EXPECT_TRUE(std::regex_match(text, layout)) << text;
  std::string message, command;
  std::size_t caret = 7;
  ASSERT_TRUE(ErrorLog::parse_last(text, message, command, caret));
  EXPECT_EQ(message, "cannot read the ring buffer of CPU 1: Input/output error");
  EXPECT_EQ(command, "");
  EXPECT_EQ(caret, 0u);
}

TEST_F(ControllerTest, RawTriggersPassThroughAndExpandGlobsTheKernelRefuses) {
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_switch"}, "enable_event:irq:softirq_*:2 if prev_prio < 100"), 0);
  EXPECT_EQ(fake.triggers(kSwitch),
            (std::vector<std::string>{"enable_event:irq:softirq_entry:count=2 if prev_prio < 100",
                                      "enable_event:irq:softirq_exit:count=2 if prev_prio < 100"}));
  std::string out;
  ASSERT_EQ(ctl.read_trigger(EventName{"sched", "sched_switch"}, out), 0);
  EXPECT_EQ(out,
            "enable_event:irq:softirq_exit:count=2 if prev_prio < 100\n"
            "enable_event:irq:softirq_entry:count=2 if prev_prio < 100\n");
  // Seen through the stable file, in stable names.
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"),
            "enable_event:softirq_exit:count=2 if prev_prio < 100\n"
            "enable_event:softirq_entry:count=2 if prev_prio < 100\n");
}

// The 2013 proposal's first example: two commands in one write, each its
// own kernel trigger.
TEST_F(ControllerTest, SeveralCommandsInOneWriteEachBecomeAKernelTrigger) {
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_switch"}, "enable_event:irq:softirq_entry enable_event:irq:softirq_exit\n"),
            0)
      << ctl.error_log().text();
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{"enable_event:irq:softirq_entry:unlimited",
                                                              "enable_event:irq:softirq_exit:unlimited"}));
  // On a stable file, with a filter that ends where the next command begins,
  // one that goes on over a newline, and a command word quoted in a filter.
  ASSERT_EQ(ctl.write_trigger(index("task_switch"),
                              "stacktrace:5 if from == 1 traceoff if to == 2\n  && from == 3\n"
                              "disable_event:sched_wakeup if to == \"traceon\""),
            0)
      << ctl.error_log().text();
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{
                                        "enable_event:irq:softirq_entry:unlimited",
                                        "enable_event:irq:softirq_exit:unlimited",
                                        "stacktrace:count=5 if prev_pid == 1",
                                        "traceoff:unlimited if next_pid == 2   && prev_pid == 3",
                                        "disable_event:sched:sched_wakeup:unlimited if next_pid == \"traceon\""}));
  EXPECT_EQ(read(&Controller::read_trigger, "task_switch"),
            "disable_event:sched_wakeup:unlimited if to == \"traceon\"\n"
            "traceoff:unlimited if to == 2   && from == 3\n"
            "stacktrace:count=5 if from == 1\n"
            "enable_event:softirq_exit:unlimited\n"
            "enable_event:softirq_entry:unlimited\n");
  // Removals, several at once.
  ASSERT_EQ(ctl.write_trigger(index("task_switch"), "!stacktrace !traceoff !disable_event:sched_wakeup"), 0);
  EXPECT_EQ(fake.triggers(kSwitch).size(), 2u);
}

// A write is applied all or nothing: when the kernel refuses its third
// command, the first two (a removal and an addition) are undone, newest
// first, and the removed trigger comes back with its count and filter.
TEST_F(ControllerTest, AKernelRefusalUndoesTheWholeWriteNewestFirst) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "traceon:7 if prev_pid == 4"), 0);
  const auto before = fake.triggers(kSwitch);
  fake.fail_after = 2;
  EXPECT_EQ(ctl.write_trigger(sw, "!traceon stacktrace enable_event:sched_wakeup"), ENOMEM);
  EXPECT_EQ(fake.triggers(kSwitch), before);
  std::string log = ctl.error_log().text();
  // The caret is at the refused command.
  EXPECT_NE(log.find("  Command: !traceon stacktrace enable_event:sched_wakeup\n" + std::string(11 + 20, ' ') + "^"),
            std::string::npos)
      << log;
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"), "traceon:count=7 if prev_pid == 4\n");
}

TEST_F(ControllerTest, FilterAndEnableWritesOfSeveralLinesAreOneValueOrRefusedWhole) {
  std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_filter(sw, "prev_pid == 4\n"), 0);
  ASSERT_EQ(ctl.write_enable(sw, "1\n"), 0);
  // The kernel refuses a filter of several lines and keeps a piece of it:
  // refused whole before the kernel sees it, the last filter stays.
  EXPECT_EQ(ctl.write_filter(sw, "prev_pid == 5 &&\nnext_pid == 6\n"), EINVAL);
  EXPECT_EQ(ctl.write_filter(EventName{"sched", "sched_switch"}, "prev_pid == 7\nnext_pid == 8\n"), EINVAL);
  EXPECT_EQ(fake.filter(kSwitch), "prev_pid == 4");
  EXPECT_NE(ctl.error_log().text().find("One filter per write: found a second line"), std::string::npos);
  EXPECT_EQ(ctl.write_enable(sw, "0\n1\n"), EINVAL);
  EXPECT_EQ(ctl.write_enable(sw, "0\n0\n"), EINVAL);
  EXPECT_TRUE(fake.enabled(kSwitch));
  EXPECT_EQ(read(&Controller::read_enable, "sched_switch"), "1\n");
}

TEST(ParseTriggers, CommandsBeginAtKnownCommandNamesOutsideQuotes) {
  auto parsed =
      parse_triggers("  traceon:3 if a == 1 !stacktrace\nenable_event:x:y if c == 'traceoff' disable_event:p:q",
                     TargetStyle::Raw);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::vector<TriggerCommand>& out = *parsed;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].command, "traceon");
  EXPECT_EQ(out[0].command_pos, 2u);
  EXPECT_EQ(*out[0].count, "3");
  EXPECT_EQ(out[0].filter, "a == 1");
  EXPECT_TRUE(out[1].remove);
  EXPECT_EQ(out[1].command, "stacktrace");
  EXPECT_FALSE(out[1].has_filter);
  EXPECT_EQ(out[2].target, "x:y");
  EXPECT_EQ(out[2].filter, "c == 'traceoff'");
  EXPECT_EQ(out[3].command, "disable_event");
  // A word that only starts like a command is not one; text before the first
  // command is an unknown command, with its position.
  auto one = parse_triggers("traceoff if traceonly == 1", TargetStyle::Raw);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->size(), 1u);
  auto unknown = parse_triggers("bogus traceon", TargetStyle::Raw);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "Unknown command 'bogus'");
  auto bad_count = parse_triggers("traceon stacktrace:x", TargetStyle::Raw);
  ASSERT_FALSE(bad_count);
  EXPECT_EQ(bad_count.error().message, "Invalid count");
  EXPECT_EQ(bad_count.error().pos, 19u);
  auto empty = parse_triggers(" \n ", TargetStyle::Raw);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "Empty command");
}

class ControllerRefuses : public ControllerTest, public ::testing::WithParamInterface<testing::RefusedWrite> {};

TEST_P(ControllerRefuses, WithErrnoALogLineAndNoChange) {
  const testing::RefusedWrite& w = GetParam();
  int writes_before = fake.writes;
  std::string file = w.file;
  int err;
  if (file.rfind("raw/", 0) == 0) {
    ASSERT_EQ(file, "raw/sched/sched_switch/trigger");
    err = ctl.write_trigger(EventName{"sched", "sched_switch"}, w.data);
  } else {
    std::size_t i = index(file.substr(0, file.find('/')));
    std::string kind = file.substr(file.find('/') + 1);
    err = kind == "trigger" ? ctl.write_trigger(i, w.data)
          : kind == "filter" ? ctl.write_filter(i, w.data)
                             : ctl.write_enable(i, w.data);
  }
  EXPECT_EQ(err, w.err);
  EXPECT_EQ(fake.writes, writes_before) << "a refused write reached the kernel";
  std::string log = ctl.error_log().text();
  EXPECT_NE(log.find(w.log), std::string::npos) << log;
  EXPECT_NE(log.find(": error: "), std::string::npos);
  EXPECT_NE(log.find("\n  Command: "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Inputs, ControllerRefuses, ::testing::ValuesIn(testing::refused_writes()),
                         [](const auto& info) {
                           std::string n = info.param.what;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace eventfs
