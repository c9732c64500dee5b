// enable, filter and trigger written through a mount and checked against what
// lands in the daemon's own tracefs instance, and triggers that really fire.
// Nothing here may touch the top-level instance.

#include <fnmatch.h>
#include <functional>
#include <random>
#include <string_view>


#include "support/control_fixture.h"

namespace eventfs_it {
namespace {

using namespace control;

class ControlTranslation : public ControlTest {
 protected:
  void SetUp() override {
    ControlTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(catalog_dir_.ok());
    catalog_ = write_task_switch_catalog(catalog_dir_);
    m_ = std::make_unique<MountedEventfs>(std::vector<std::string>{"-o", "catalog=" + catalog_});
    ASSERT_TRUE(m_->Start());
    inst_ = instance_dir(m_->instance());
    ASSERT_TRUE(exists(m_->path() + "/task_switch/trigger")) << slurp(*m_ / "available_events");
  }
  void TearDown() override {
    if (m_) {
      m_->Stop();
      EXPECT_FALSE(exists(inst_)) << "instance left behind";
      EXPECT_EQ(m_->Stderr(), "");
      m_.reset();
    }
    ControlTest::TearDown();
  }
  // The instance's file (relative to its events/) and the mount's file.
  std::string K(const std::string& rel) const { return slurp(inst_ + "/events/" + rel); }
  std::string M(const std::string& rel) const { return slurp(*m_ / rel); }
  ::testing::AssertionResult Write(const std::string& rel, std::string_view data) { return Accepts(*m_, rel, data); }

  TempDir catalog_dir_;
  std::string catalog_;
  std::unique_ptr<MountedEventfs> m_;
  std::string inst_;
};

TEST_F(ControlTranslation, EnableIsTheRawEventsEnableInTheInstance) {
  const std::string k = "sched/sched_switch/enable";
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  EXPECT_EQ(K(k), "1\n");
  EXPECT_EQ(M("sched_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "1"));  // no newline (echo -n)
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0"));
  EXPECT_EQ(K(k), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));  // twice: not an error, as on tracefs
  EXPECT_EQ(K(k), "0\n");
  // raw/ toggles the raw event.
  ASSERT_TRUE(Write("raw/sched/sched_process_free/enable", "1\n"));
  EXPECT_EQ(K("sched/sched_process_free/enable"), "1\n");
  EXPECT_EQ(M("raw/sched/sched_process_free/enable"), "1\n");
  ASSERT_TRUE(Write("raw/sched/sched_process_free/enable", "0\n"));
  EXPECT_EQ(K("sched/sched_process_free/enable"), "0\n");
  EXPECT_EQ(M("raw/sched/sched_process_free/enable"), "0\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/enable", "1\n"));
  EXPECT_EQ(K("sched/sched_wakeup/enable"), "1\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/enable", "0\n"));
  EXPECT_EQ(K("sched/sched_wakeup/enable"), "0\n");
}

TEST_F(ControlTranslation, EnableIsReferenceCountedOverTheStableEventsOfOneRawEvent) {
  const std::string k = "sched/sched_switch/enable";
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("task_switch/enable", "1\n"));
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "1\n") << "task_switch still uses sched:sched_switch";
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  EXPECT_EQ(M("task_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));  // a second 0 does not take task_switch's use away
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("task_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("task_switch/enable"), "0\n");
  // raw/ counts as one more user.
  ASSERT_TRUE(Write("raw/sched/sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("raw/sched/sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "1\n");
  EXPECT_EQ(M("sched_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
}

TEST_F(ControlTranslation, FiltersAreRenamedAndTaskStateLettersBecomeBitTests) {
  const std::string k = "sched/sched_switch/filter";
  EXPECT_EQ(K(k), "none\n");
  EXPECT_EQ(M("sched_switch/filter"), "none\n");
  ASSERT_TRUE(Write("task_switch/filter", "from == 1 && to != 2\n"));
  EXPECT_EQ(K(k), "prev_pid == 1 && next_pid != 2\n");
  EXPECT_EQ(M("task_switch/filter"), "from == 1 && to != 2\n");
  EXPECT_EQ(M("sched_switch/filter"), "prev_pid == 1 && next_pid != 2\n");

  ASSERT_TRUE(Write("sched_switch/filter", "prev_state == 'S'\n"));
  EXPECT_EQ(K(k), "(prev_state & 1)\n");
  EXPECT_EQ(M("sched_switch/filter"), "prev_state == 'S'\n");

  ASSERT_TRUE(Write("task_switch/filter", "state == 'D'\n"));
  EXPECT_EQ(K(k), "(prev_state & 2 && !(prev_state & 1))\n");
  EXPECT_EQ(M("task_switch/filter"), "state == 'D'\n");

  ASSERT_TRUE(Write("task_switch/filter", "from == 7 && state != 'S'\n"));
  EXPECT_EQ(K(k), "prev_pid == 7 && !(prev_state & 1)\n");
  EXPECT_EQ(M("task_switch/filter"), "from == 7 && state != 'S'\n");

  ASSERT_TRUE(Write("task_switch/filter", "0\n"));
  EXPECT_EQ(K(k), "none\n");
  EXPECT_EQ(M("task_switch/filter"), "none\n");
  EXPECT_EQ(M("sched_switch/filter"), "none\n");

  // Filters of other stable events, and raw/ as it is.
  ASSERT_TRUE(Write("sched_wakeup/filter", "pid == 1 || prio < 100\n"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "pid == 1 || prio < 100\n");
  ASSERT_TRUE(Write("sched_wakeup/filter", "0"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "none\n");
  ASSERT_TRUE(Write("raw/sched/sched_switch/filter", "prev_prio < 100\n"));
  EXPECT_EQ(K(k), "prev_prio < 100\n");
  EXPECT_EQ(M("raw/sched/sched_switch/filter"), "prev_prio < 100\n");
  ASSERT_TRUE(Write("raw/sched/sched_switch/filter", "0\n"));
  EXPECT_EQ(K(k), "none\n");
}

TEST_F(ControlTranslation, TriggersAreTranslatedAndReadBackInStableNames) {
  // pid -1 never runs: the counts stay as written (pid 1 is switched out now and then).
  const std::string k = "sched/sched_switch/trigger";
  ASSERT_TRUE(Write("sched_switch/trigger", "enable_event:sched_migrate_task if prev_pid == -1\n"));
  EXPECT_EQ(K(k), "enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1\n");
  EXPECT_EQ(M("sched_switch/trigger"), "enable_event:sched_migrate_task:unlimited if prev_pid == -1\n");

  ASSERT_TRUE(Write("sched_switch/trigger", "traceoff:5 if prev_pid == -1\n"));
  const std::string kernel = K(k);
  EXPECT_EQ(as_set(trigger_lines(kernel)),
            (std::set<std::string>{"enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1",
                                   "traceoff:count=5 if prev_pid == -1"}));
  // In the kernel's order, line for line.
  std::string expected;
  for (const auto& l : trigger_lines(kernel))
    expected += l.rfind("traceoff:", 0) == 0 ? l + "\n" : "enable_event:sched_migrate_task:unlimited if prev_pid == -1\n";
  EXPECT_EQ(M("sched_switch/trigger"), expected);

  // A trigger filter in task_switch's names, with a task state.
  ASSERT_TRUE(Write("task_switch/trigger", "stacktrace if from == 7 && state == 'D'\n"));
  EXPECT_TRUE(as_set(trigger_lines(K(k)))
                  .count("stacktrace:unlimited if prev_pid == 7 && (prev_state & 2 && !(prev_state & 1))"))
      << K(k);
  auto task_lines = trigger_lines(M("task_switch/trigger"));
  EXPECT_TRUE(as_set(task_lines).count("stacktrace:unlimited if from == 7 && state == 'D'")) << M("task_switch/trigger");
  // Each reader sees the other's triggers in its own field names.
  EXPECT_TRUE(as_set(task_lines).count("enable_event:sched_migrate_task:unlimited if from == -1"))
      << M("task_switch/trigger");
  for (const auto& l : trigger_lines(M("sched_switch/trigger")))
    EXPECT_EQ(l.find("from"), std::string::npos) << "task_switch's names in sched_switch/trigger: " << l;

  ASSERT_TRUE(Write("sched_switch/trigger", "!traceoff\n"));
  ASSERT_TRUE(Write("task_switch/trigger", "!stacktrace\n"));
  EXPECT_EQ(K(k), "enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1\n");
  ASSERT_TRUE(Write("sched_switch/trigger", "!enable_event:sched_migrate_task\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  // No triggers: the kernel's header, as it is.
  const std::string header = M("sched_switch/trigger");
  EXPECT_EQ(header.rfind(kHeaderStart, 0), 0u) << header;
  EXPECT_EQ(header, K(k));
  // The commands this test used are in the kernel's list (which varies:
  // 5.10's and 6.1's have snapshot between traceoff and stacktrace).
  for (const char* command : {" traceon", " traceoff", " stacktrace", " enable_event", " disable_event"})
    EXPECT_NE(header.find(command), std::string::npos) << command << " not in " << header;
  EXPECT_EQ(M("sched_wakeup/trigger"), K("sched/sched_wakeup/trigger"));
}

// Filters the daemon's own parser lets through but the kernel refuses: the
// kernel's errno and message, the caret in the user's text, and the filter
// that was there stays.
TEST_F(ControlTranslation, AFilterTheKernelRefusesKeepsThePreviousOneAndIsLoggedInStableTerms) {
  const std::string k = "sched/sched_switch/filter";
  ASSERT_TRUE(Write("task_switch/filter", "from == 1\n"));
  ASSERT_EQ(K(k), "prev_pid == 1\n");
  ASSERT_EQ(write_once(*m_ / "error_log", "", O_WRONLY | O_TRUNC), 0);

  const std::string bad = "state == \"S\" || from == bogus";
  EXPECT_EQ(write_once(*m_ / "task_switch/filter", bad + "\n"), EINVAL);
  EXPECT_EQ(K(k), "prev_pid == 1\n") << "the refused filter dropped the previous one";
  EXPECT_EQ(M("task_switch/filter"), "from == 1\n");
  auto lines = split_lines(M("error_log"));
  ASSERT_EQ(lines.size(), 3u) << M("error_log");
  EXPECT_NE(lines[0].find(" task_switch/filter: error: "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "  Command: " + bad);
  // The caret points into "bogus" in what the user wrote (the kernel's points into its raw text).
  std::size_t caret = lines[2].find('^'), at = 11 + bad.find("bogus");
  EXPECT_TRUE(caret >= at && caret < at + 5) << "\n" << lines[1] << "\n" << lines[2];
  EXPECT_EQ(slurp(inst_ + "/error_log"), "") << "the instance's own error_log is consumed";

  EXPECT_EQ(write_once(*m_ / "raw/sched/sched_switch/filter", "prev_pid == zzz\n"), EINVAL);
  EXPECT_EQ(K(k), "prev_pid == 1\n");
  EXPECT_NE(M("error_log").find(" raw/sched/sched_switch/filter: error: "), std::string::npos) << M("error_log");

  EXPECT_EQ(write_once(*m_ / "sched_wakeup/filter", "pid ~ \"x*\"\n"), EINVAL);
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "none\n");
  EXPECT_EQ(M("sched_wakeup/filter"), "none\n");

  // A trigger whose filter the kernel refuses is not added.
  const std::string trig_before = K("sched/sched_switch/trigger");
  EXPECT_EQ(write_once(*m_ / "task_switch/trigger", "traceoff if from == bogus\n"), EINVAL);
  EXPECT_EQ(K("sched/sched_switch/trigger"), trig_before);
  EXPECT_NE(M("error_log").find("  Command: traceoff if from == bogus\n"), std::string::npos) << M("error_log");
}

TEST_F(ControlTranslation, AStableGlobIsOneKernelTriggerPerEventAndItsRemovalRemovesThemAll) {
  const std::string k = "sched/sched_switch/trigger";
  ASSERT_TRUE(Write("sched_switch/trigger", "enable_event:sched_process_*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), (std::set<std::string>{"enable_event:sched:sched_process_fork:unlimited",
                                                                "enable_event:sched:sched_process_exec:unlimited",
                                                                "enable_event:sched:sched_process_exit:unlimited"}));
  EXPECT_EQ(as_set(trigger_lines(M("sched_switch/trigger"))),
            (std::set<std::string>{"enable_event:sched_process_fork:unlimited",
                                   "enable_event:sched_process_exec:unlimited",
                                   "enable_event:sched_process_exit:unlimited"}));
  ASSERT_TRUE(Write("sched_switch/trigger", "!enable_event:sched_process_*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  EXPECT_EQ(M("sched_switch/trigger").rfind(kHeaderStart, 0), 0u);
}

TEST_F(ControlTranslation, ARawGlobIsExpandedOverTheKernelsEvents) {
  const std::string k = "sched/sched_switch/trigger";
  // softirq_*: as many kernel triggers as this kernel has irq:softirq_* events.
  auto softirqs = events_matching("irq", "softirq_*");
  ASSERT_GE(softirqs.size(), 2u);
  std::set<std::string> expected, expected_stable;
  for (const auto& ev : softirqs) {
    expected.insert("enable_event:irq:" + ev + ":unlimited");
    bool stable = ev == "softirq_entry" || ev == "softirq_exit";
    expected_stable.insert(stable ? "enable_event:" + ev + ":unlimited" : "enable_event:irq:" + ev + ":unlimited");
  }
  EXPECT_TRUE(expected.count("enable_event:irq:softirq_entry:unlimited"));
  EXPECT_TRUE(expected.count("enable_event:irq:softirq_exit:unlimited"));
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "enable_event:irq:softirq_*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), expected);
  EXPECT_EQ(M("raw/sched/sched_switch/trigger"), K(k));  // raw/ as the kernel prints it
  EXPECT_EQ(as_set(trigger_lines(M("sched_switch/trigger"))), expected_stable);
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "!enable_event:irq:softirq_*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);

  // The proposal's own example: one kernel trigger per block event.
  auto blocks = events_matching("block", "*");
  ASSERT_GT(blocks.size(), 2u);
  expected.clear();
  for (const auto& ev : blocks) expected.insert("enable_event:block:" + ev + ":unlimited");
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "enable_event:block:*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), expected);
  EXPECT_EQ(trigger_lines(K(k)).size(), blocks.size());
  // Each block event is held by its trigger (soft mode: "0*", or "1*" once fired).
  for (const auto& ev : blocks) EXPECT_EQ(K("block/" + ev + "/enable").substr(1), "*\n") << ev;
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "!enable_event:block:*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  for (const auto& ev : blocks) EXPECT_EQ(K("block/" + ev + "/enable").find('*'), std::string::npos) << ev;
}

// The 2013 proposal's first example, verbatim: two commands in one write,
// two kernel triggers; one write removes both. A write whose second command
// the kernel would refuse (its target is already held by a trigger of the
// same kind) is refused whole: its first command is not applied either.
TEST_F(ControlTranslation, TheProposalsFirstExampleIsTwoTriggersAndAWriteIsAllOrNothing) {
  const std::string k = "syscalls/sys_enter_read/trigger";
  ASSERT_TRUE(exists(inst_ + "/events/" + k)) << "no syscalls:sys_enter_read on this kernel";
  ASSERT_TRUE(Write("raw/syscalls/sys_enter_read/trigger",
                    "enable_event:filemap:mm_filemap_add_to_page_cache "
                    "enable_event:filemap:mm_filemap_delete_from_page_cache\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))),
            (std::set<std::string>{"enable_event:filemap:mm_filemap_add_to_page_cache:unlimited",
                                   "enable_event:filemap:mm_filemap_delete_from_page_cache:unlimited"}));
  const std::string before = K(k);
  EXPECT_EQ(write_once(*m_ / "raw/syscalls/sys_enter_read/trigger",
                       "stacktrace:3 if fd == 1\ndisable_event:filemap:mm_filemap_add_to_page_cache\n"),
            EEXIST);
  EXPECT_EQ(K(k), before);
  const std::string log = M("error_log");
  EXPECT_NE(log.find("raw/syscalls/sys_enter_read/trigger: error: File exists: "
                     "'enable_event:filemap:mm_filemap_add_to_page_cache:unlimited' is set already"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("  Command: stacktrace:3 if fd == 1\\x0adisable_event:"), std::string::npos) << log;
  ASSERT_TRUE(Write("raw/syscalls/sys_enter_read/trigger",
                    "!enable_event:filemap:mm_filemap_add_to_page_cache\n"
                    "!enable_event:filemap:mm_filemap_delete_from_page_cache\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
}

// ---------------------------------------------------------------------------
// 3. Refused writes: the errno, a line in error_log, and no change.

class ControlTriggersFire : public ControlTest {};

TEST_F(ControlTriggersFire, EnableEventAndTraceoffTakeEffect) {
  const std::string top_tracing_on = slurp(std::string(kLiveTracefs) + "/tracing_on");
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  ASSERT_EQ(slurp(inst + "/tracing_on"), "1\n");
  const std::string migrate = inst + "/events/sched/sched_migrate_task/enable";
  ASSERT_EQ(slurp(migrate), "0\n");
  ASSERT_EQ(slurp(m / "sched_migrate_task/enable"), "0\n");

  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "enable_event:sched_migrate_task\n"));
  // Armed, the target is soft-disabled until the trigger fires.
  EXPECT_TRUE(slurp(migrate) == "0*\n" || slurp(migrate) == "1*\n") << slurp(migrate);
  EXPECT_TRUE(switch_until([&] { return slurp(migrate) == "1*\n"; })) << slurp(migrate);
  EXPECT_EQ(slurp(m / "sched_migrate_task/enable"), "1*\n");

  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "traceoff\n"));
  EXPECT_TRUE(switch_until([&] { return slurp(inst + "/tracing_on") == "0\n"; })) << slurp(inst + "/tracing_on");
  EXPECT_EQ(as_set(trigger_lines(slurp(m / "sched_switch/trigger"))),
            (std::set<std::string>{"enable_event:sched_migrate_task:unlimited", "traceoff:unlimited"}));
  EXPECT_EQ(slurp(std::string(kLiveTracefs) + "/tracing_on"), top_tracing_on) << "top-level tracing switched";

  // Disarmed, the target is no longer held (a fired enable_event leaves it enabled, as on tracefs).
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "!enable_event:sched_migrate_task\n"));
  EXPECT_EQ(slurp(migrate).find('*'), std::string::npos) << slurp(migrate);
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 5. Many threads writing and reading control files at once.

}  // namespace
}  // namespace eventfs_it
