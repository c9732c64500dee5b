// The kernel's trigger lines: what counts as the same trigger, how a listed
// line is written again, and what removes it.
#include <gtest/gtest.h>

#include "control/trigger_lines.h"

namespace eventfs {
namespace {

TEST(TriggerLines, TheKindIsWhatTheKernelRefusesASecondOf) {
  EXPECT_EQ(trigger_kind("enable_event:sched:sched_switch:count=3 if prev_pid == 1"), "event sched:sched_switch");
  EXPECT_EQ(trigger_kind("!disable_event:sched:sched_wakeup"), "event sched:sched_wakeup");
  EXPECT_EQ(trigger_kind("traceoff:unlimited"), "traceon/traceoff");
  EXPECT_EQ(trigger_kind("!traceon"), "traceon/traceoff");
  EXPECT_EQ(trigger_kind("stacktrace:5 if a == 1"), "stacktrace");
  EXPECT_EQ(trigger_kind("hist:keys=pid"), "");
  EXPECT_EQ(trigger_kind("enable_event:sched"), "");  // no target: the kernel's to refuse
}

TEST(TriggerLines, AListedLineIsWrittenAgainWithItsCountAndCondition) {
  EXPECT_EQ(input_form("traceon:count=5 if a == 1"), "traceon:5 if a == 1");
  EXPECT_EQ(input_form("stacktrace:unlimited"), "stacktrace");
  EXPECT_EQ(input_form("enable_event:sched:sched_switch:count=0"), "enable_event:sched:sched_switch:0");
  EXPECT_EQ(input_form("enable_event:sched:sched_switch:unlimited if x == 2"),
            "enable_event:sched:sched_switch if x == 2");
}

TEST(TriggerLines, ARemovalNamesCommandAndTargetOnly) {
  EXPECT_EQ(removal_of("enable_event:sched:sched_switch:3 if a == 1"), "!enable_event:sched:sched_switch");
  EXPECT_EQ(removal_of("traceon:5"), "!traceon");
  EXPECT_EQ(removal_of("traceon"), "!traceon");
  EXPECT_EQ(removal_of("disable_event:sched:sched_wakeup"), "!disable_event:sched:sched_wakeup");
}

TEST(TriggerLines, IdentityLinesAndParts) {
  EXPECT_EQ(line_identity("enable_event:sched:sched_switch:count=3 if a == 1"), "enable_event:sched:sched_switch");
  EXPECT_EQ(line_identity("traceoff:unlimited if a == 1"), "traceoff");
  EXPECT_EQ(lines_of("a\n\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(colon_parts("a::b"), (std::vector<std::string>{"a", "", "b"}));
}

}  // namespace
}  // namespace eventfs
