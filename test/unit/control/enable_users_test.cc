// Who enables a raw event: a stable event's own enable and its holds count as
// its own, another stable event's (even one whose name it begins) does not,
// and a change the kernel refused is put back.
#include <gtest/gtest.h>

#include "control/enable_users.h"

namespace eventfs {
namespace {

const std::string kDir = "events/sched/sched_switch";

TEST(EnableUsers, NobodyUntilSomeoneEnables) {
  EnableUsers u;
  EXPECT_FALSE(u.who(kDir, "sched_switch").anyone);
  EnableUsers::Change c = u.set(kDir, EnableUsers::kRawUser, true);
  EXPECT_FALSE(c.before);
  EXPECT_TRUE(c.after);
  EXPECT_FALSE(c.had);
  EnableUsers::Who w = u.who(kDir, "sched_switch");
  EXPECT_TRUE(w.anyone);
  EXPECT_FALSE(w.mine);
  c = u.set(kDir, EnableUsers::kRawUser, false);
  EXPECT_TRUE(c.before);
  EXPECT_FALSE(c.after);
  EXPECT_TRUE(c.had);
  EXPECT_FALSE(u.who(kDir, "sched_switch").anyone);
}

TEST(EnableUsers, OwnEnableAndHoldsAreMineAnotherEventsAreNot) {
  EnableUsers u;
  u.set(kDir, EnableUsers::stable_user("sched_switch_long"), true);
  EXPECT_TRUE(u.who(kDir, "sched_switch").anyone);
  EXPECT_FALSE(u.who(kDir, "sched_switch").mine);
  EXPECT_TRUE(u.who(kDir, "sched_switch_long").mine);
  const std::string hold = u.hold_of(EnableUsers::stable_user("sched_switch"));
  EXPECT_NE(hold, u.hold_of(EnableUsers::stable_user("sched_switch")));  // each hold its own name
  u.set(kDir, hold, true);
  EXPECT_TRUE(u.who(kDir, "sched_switch").mine);
  u.set(kDir, hold, false);
  EXPECT_FALSE(u.who(kDir, "sched_switch").mine);
  u.set(kDir, EnableUsers::stable_user("sched_switch"), true);
  EXPECT_TRUE(u.who(kDir, "sched_switch").mine);
  EXPECT_FALSE(u.who("events/sched/sched_wakeup", "sched_switch").anyone);
}

TEST(EnableUsers, UndoPutsTheUserBackAsItWas) {
  EnableUsers u;
  const std::string me = EnableUsers::stable_user("sched_switch");
  EnableUsers::Change c = u.set(kDir, me, true);
  u.undo(kDir, me, c);
  EXPECT_FALSE(u.who(kDir, "sched_switch").anyone);
  u.set(kDir, me, true);
  c = u.set(kDir, me, false);
  u.undo(kDir, me, c);
  EXPECT_TRUE(u.who(kDir, "sched_switch").mine);
}

}  // namespace
}  // namespace eventfs
