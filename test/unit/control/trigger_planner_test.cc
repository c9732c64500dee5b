// Trigger planning on its own, with no instance: what a write to a trigger
// file becomes in the kernel's names, and the refusals (errno, message,
// caret) planning returns as values, from the variables and saves a
// PlanningState says there are.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/stable_names.h"
#include "control/trigger.h"
#include "control/trigger_planner.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;

class TriggerPlannerTest : public ::testing::Test {
 protected:
  TriggerPlannerTest() : fx("linux-6.18") {
    for (const auto& b : fx.resolution.available) stable.push_back(stable_names_of(b));
    for (const auto& s : stable)
      for (const auto& [name, f] : s.fields) reserved.insert(name);
  }
  const StableNames& event(const std::string& name) const {
    for (const auto& s : stable)
      if (s.name == name) return s;
    throw std::runtime_error("no event " + name);
  }
  Result<TriggerPlan, Refusal> plan_stable(const std::string& name, const std::string& text,
                                           const PlanningState& state = {}) const {
    auto commands = parse_triggers(text, TargetStyle::Stable);
    if (!commands) throw std::runtime_error("cannot parse " + text);
    const StableNames& s = event(name);
    return planner.plan(s.event, Names::of(s), *commands, state);
  }
  Result<TriggerPlan, Refusal> plan_raw(const EventName& ev, const std::string& text,
                                        const PlanningState& state = {}) const {
    auto commands = parse_triggers(text, TargetStyle::Raw);
    if (!commands) throw std::runtime_error("cannot parse " + text);
    return planner.plan(ev, Names::kernel(), *commands, state);
  }
  static std::vector<std::string> texts(const TriggerPlan& p) {
    std::vector<std::string> out;
    for (const auto& w : p.writes) out.push_back(w.dir + " <- " + w.text);
    return out;
  }

  ResolvedFixture fx;
  std::vector<StableNames> stable;
  std::set<std::string> reserved;
  std::vector<std::string> available{"traceon", "traceoff", "stacktrace", "enable_event", "disable_event"};
  TriggerPlanner planner{available, stable, *fx.tracefs, reserved};
};

TEST_F(TriggerPlannerTest, AStableTriggerBecomesTheKernelsNamesAndTargets) {
  auto p = plan_stable("sched_switch", "enable_event:sched_wakeup if prev_pid == 1");
  ASSERT_TRUE(p) << p.error().reason;
  EXPECT_EQ(texts(*p), std::vector<std::string>{
                           "events/sched/sched_switch <- enable_event:sched:sched_wakeup if prev_pid == 1"});
  EXPECT_EQ(p->dirs, (std::vector<std::string>{"events/sched/sched_switch", "events/sched/sched_wakeup"}));
  ASSERT_EQ(p->records.size(), 1u);
  EXPECT_EQ(p->records[0].identity, "enable_event:sched:sched_wakeup");
  EXPECT_EQ(p->records[0].stable_target, "sched_wakeup");
}

TEST_F(TriggerPlannerTest, ARawGlobIsExpandedOverTheKernelsEvents) {
  auto p = plan_raw({"sched", "sched_switch"}, "enable_event:sched:sched_process_e*");
  ASSERT_TRUE(p) << p.error().reason;
  EXPECT_EQ(texts(*p), (std::vector<std::string>{
                           "events/sched/sched_switch <- enable_event:sched:sched_process_exec",
                           "events/sched/sched_switch <- enable_event:sched:sched_process_exit"}));
  EXPECT_EQ(p->dirs, (std::vector<std::string>{"events/sched/sched_switch", "events/sched/sched_process_exec",
                                               "events/sched/sched_process_exit"}));
  auto none = plan_raw({"sched", "sched_switch"}, "enable_event:sched:nothing_*");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().reason, "No event matches 'sched:nothing_*'");
}

TEST_F(TriggerPlannerTest, RefusalsAreValuesWithTheirErrnoAndCaret) {
  // A command the kernel does not have: its place in the write.
  auto unknown = plan_stable("sched_switch", "traceon snapshot");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, EINVAL);
  EXPECT_NE(unknown.error().reason.find("'snapshot' is not available"), std::string::npos) << unknown.error().reason;
  EXPECT_EQ(unknown.error().caret, std::string("traceon ").size());
  // A target no stable event is.
  auto target = plan_stable("sched_switch", "enable_event:no_such_event");
  ASSERT_FALSE(target);
  EXPECT_EQ(target.error().caret, std::string("enable_event:").size());
  // A field the condition's event does not have: the caret in the filter.
  auto field = plan_stable("sched_switch", "traceoff if nope == 1");
  ASSERT_FALSE(field);
  EXPECT_EQ(field.error().caret, std::string("traceoff if ").size()) << field.error().reason;
}

TEST_F(TriggerPlannerTest, SavesFollowTheStateTheyAreGiven) {
  planner.set_can_save(false);
  auto none = plan_stable("sched_switch", "save:who=next_pid");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, EOPNOTSUPP);

  planner.set_can_save(true);
  auto armed = plan_stable("sched_switch", "save:who=next_pid");
  ASSERT_TRUE(armed) << armed.error().reason;
  ASSERT_EQ(armed->saves.size(), 1u);
  EXPECT_EQ(armed->saves[0].spec.field.name, "next_pid");
  EXPECT_TRUE(armed->writes.empty());

  PlanningState state;
  state.saves.emplace("events/sched/sched_switch", "who");
  auto twice = plan_stable("sched_switch", "save:who=next_pid", state);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, EEXIST);
  auto removed = plan_stable("sched_switch", "!save:who=next_pid", state);
  EXPECT_TRUE(removed) << removed.error().reason;
  auto not_there = plan_stable("sched_switch", "!save:who=next_pid");
  ASSERT_FALSE(not_there);
  EXPECT_EQ(not_there.error().code, ENOENT);

  // A condition may name a variable the same write's save declares, and
  // one the state has with its value.
  state = {};
  state.variables["target"] = 42;
  auto uses = plan_stable("sched_switch", "save:who=next_pid traceoff if next_pid == target", state);
  ASSERT_TRUE(uses) << uses.error().reason;
  ASSERT_EQ(texts(*uses), std::vector<std::string>{"events/sched/sched_switch <- traceoff if next_pid == 42"});
  EXPECT_EQ(uses->records[0].variables, std::set<std::string>{"target"});

  for (int i = 0; i < static_cast<int>(kMaxVariables); ++i) state.variables["v" + std::to_string(i)] = i;
  auto full = plan_stable("sched_switch", "save:another=next_pid", state);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ENOSPC);
}

}  // namespace
}  // namespace eventfs
