// Applying a trigger plan on its own, against the in-memory instance: all or
// nothing, duplicates refused before anything is written, refusals as
// values with the caret in the user's write, and a condition rewritten with
// its count kept.
#include <gtest/gtest.h>

#include "control/kernel_writer.h"
#include "control/trigger_applier.h"
#include "support/fake_instance.h"

namespace eventfs {
namespace {

using testing::FakeInstance;

constexpr const char* kSwitch = "events/sched/sched_switch";
constexpr const char* kWakeup = "events/sched/sched_wakeup";

// A plan of `texts` on sched_switch, command k at position 10 * k of the write.
TriggerPlan plan_of(const std::vector<std::string>& texts) {
  TriggerPlan p;
  for (std::size_t k = 0; k < texts.size(); ++k) {
    TriggerWrite w{kSwitch, texts[k], "", texts[k][0] == '!', k};
    if (texts[k].find("enable_event:sched:sched_wakeup") != std::string::npos) w.target_dir = kWakeup;
    p.writes.push_back(w);
    TriggerPlan::Command c;
    c.command_pos = 10 * k;
    p.commands.push_back(c);
  }
  return p;
}

class TriggerApplierTest : public ::testing::Test {
 protected:
  std::string as_is(const std::string&, const std::string& line) { return "<" + line + ">"; }
  Result<void, Refusal> apply(const TriggerPlan& p) {
    return applier.apply(p, [this](const std::string& d, const std::string& l) { return as_is(d, l); });
  }
  FakeInstance fake;
  KernelWriter kernel{fake};
  TriggerApplier applier{fake, kernel};
};

TEST_F(TriggerApplierTest, APlanIsAppliedInOrder) {
  ASSERT_TRUE(apply(plan_of({"traceon", "enable_event:sched:sched_wakeup:2"})));
  EXPECT_EQ(fake.triggers(kSwitch),
            (std::vector<std::string>{"traceon:unlimited", "enable_event:sched:sched_wakeup:count=2"}));
}

TEST_F(TriggerApplierTest, AKernelRefusalUndoesWhatTheWriteApplied) {
  ASSERT_EQ(fake.write_code(std::string(kSwitch) + "/trigger", "stacktrace:3"), 0);
  fake.fail_after = 2;  // the third write of the plan fails
  fake.fail_errno = ENOMEM;
  auto r = apply(plan_of({"traceon", "!stacktrace", "enable_event:sched:sched_wakeup"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOMEM);
  EXPECT_EQ(r.error().caret, 20u);  // the third command's
  // traceon removed again, the removed stacktrace back with its count.
  EXPECT_EQ(fake.triggers(kSwitch), std::vector<std::string>{"stacktrace:count=3"});
}

TEST_F(TriggerApplierTest, WhatATriggerSwitchedMeanwhileIsPutBack) {
  ASSERT_FALSE(fake.enabled(kWakeup));
  fake.fail_after = 1;  // the second write fails, after sched_switch's triggers fired
  fake.fire_before_failing = kSwitch;
  auto r = apply(plan_of({"enable_event:sched:sched_wakeup", "stacktrace"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().caret, 10u);
  EXPECT_TRUE(fake.triggers(kSwitch).empty());
  EXPECT_FALSE(fake.enabled(kWakeup)) << "the fired enable_event's target was left on";
}

TEST_F(TriggerApplierTest, ADuplicateIsRefusedBeforeAnythingIsWritten) {
  ASSERT_EQ(fake.write_code(std::string(kSwitch) + "/trigger", "traceoff"), 0);
  const int writes = fake.writes;
  auto r = apply(plan_of({"stacktrace", "traceon"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EEXIST);
  EXPECT_EQ(r.error().caret, 10u);
  EXPECT_NE(r.error().reason.find("'<traceoff:unlimited>' is set already"), std::string::npos) << r.error().reason;
  EXPECT_EQ(fake.writes, writes);
  // Removed earlier in the same write: no duplicate; added earlier in it: one.
  EXPECT_TRUE(apply(plan_of({"!traceoff", "traceon"})));
  auto twice = apply(plan_of({"stacktrace", "stacktrace:2"}));
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().reason.find("'stacktrace' is set already"), std::string::npos) << twice.error().reason;
}

TEST_F(TriggerApplierTest, AConditionIsRewrittenKeepingItsCount) {
  const std::string file = std::string(kSwitch) + "/trigger";
  ASSERT_EQ(fake.write_code(file, "traceon:5 if prev_pid == 1"), 0);
  ASSERT_TRUE(applier.rewrite_condition(kSwitch, "traceon", "prev_pid == 1", "prev_pid == 2"));
  EXPECT_EQ(fake.triggers(kSwitch), std::vector<std::string>{"traceon:count=5 if prev_pid == 2"});
  auto gone = applier.rewrite_condition(kSwitch, "traceon", "prev_pid == 1", "prev_pid == 3");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
}

}  // namespace
}  // namespace eventfs
