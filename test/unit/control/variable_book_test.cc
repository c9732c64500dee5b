// The variables' book on its own: values put back after a refused write,
// the count of uses, and raw/ read-back in the writer's words.
#include <gtest/gtest.h>

#include "control/variable_book.h"

namespace eventfs {
namespace {

const EventName kSwitch{"sched", "sched_switch"};
std::uint64_t none_left(int) { return 0; }

TEST(VariableBook, ARefusedChangeIsPutBackButACaptureMeanwhileStays) {
  VariableBook book;
  const VariableValues before{{"a", 1}, {"gone", 3}};
  book.set_values(before);
  // The write: a set, a new declaration, a removal.
  const VariableValues after{{"a", 2}, {"b", std::nullopt}};
  book.set_values(after);
  EXPECT_EQ(book.values(), after);
  book.restore({"a", "b", "gone"}, before, after);
  EXPECT_EQ(book.values(), before);

  book.set_values(after);
  std::string shown;
  EXPECT_EQ(book.take({{"a", 7, 0}, {"nosuch", 1, 0}}, shown), (std::set<std::string>{"a"}));
  EXPECT_EQ(shown, "a=7");
  book.restore({"a", "b", "gone"}, before, after);
  EXPECT_EQ(book.values(), (VariableValues{{"a", 7}, {"gone", 3}}));
}

TEST(VariableBook, ANewVariableNamedMeanwhileStaysDeclared) {
  VariableBook book;
  const VariableValues before{{"a", 1}};
  const VariableValues after{{"a", 1}, {"fresh", std::nullopt}};
  book.set_values(after);
  // Between the write's values and its refusal, a filter write named it.
  book.add_use({kSwitch, "", "prev_pid == fresh", Names::kernel(), {"fresh"}, "prev_pid == 0 && 0"});
  book.restore({"fresh"}, before, after);
  EXPECT_EQ(book.values(), after);
  book.drop_use(kSwitch.dir(), "");
  book.restore({"fresh"}, before, after);
  EXPECT_EQ(book.values(), before);
}

TEST(VariableBook, UsesAreCountedReplacedAndNamed) {
  VariableBook book;
  book.add_use({kSwitch, "", "prev_pid == v", Names::kernel(), {"v"}, "prev_pid == 5"});
  book.add_use({kSwitch, "traceon", "next_pid == w", Names::kernel(), {"w"}, "next_pid == 6"});
  const std::string dir = kSwitch.dir();
  EXPECT_EQ(book.uses_after(dir, {""}, 1), 2u);  // the filter replaced by one
  EXPECT_EQ(book.uses_after(dir, {"stacktrace"}, 1), 3u);
  EXPECT_EQ(book.uses_after("events/sched/other", {""}, 1), 3u);
  EXPECT_EQ(book.user_of("w"), "sched/sched_switch/trigger");
  EXPECT_EQ(book.user_of("v"), "sched/sched_switch/filter");
  EXPECT_EQ(book.user_of("x"), "");
  EXPECT_EQ(book.uses_naming({"v", "x"}), (std::vector<std::pair<std::string, std::string>>{{dir, ""}}));
  book.use_rewritten(dir, "traceon", "next_pid == 6", "next_pid == 8");
  ASSERT_TRUE(book.use(dir, "traceon"));
  EXPECT_EQ(book.use(dir, "traceon")->raw, "next_pid == 8");
  book.drop_use(dir, "");
  EXPECT_FALSE(book.use(dir, ""));
  EXPECT_EQ(book.user_of("v"), "");
}

TEST(VariableBook, RawReadBackShowsConditionsAsWrittenAndTheSaves) {
  VariableBook book;
  const std::string dir = kSwitch.dir();
  book.add_use({kSwitch, "", "prev_pid == v", Names::kernel(), {"v"}, "prev_pid == 5"});
  book.add_use({kSwitch, "traceon", "next_pid == v", Names::kernel(), {"v"}, "next_pid == 5"});
  EXPECT_EQ(book.raw_filter(dir, "prev_pid == 5\n"), "prev_pid == v\n");
  EXPECT_EQ(book.raw_filter(dir, "prev_pid == 4\n"), "prev_pid == 4\n");
  EXPECT_EQ(book.raw_triggers(dir, "traceon:unlimited if next_pid == 5\nstacktrace:unlimited\n",
                               none_left),
            "traceon:unlimited if next_pid == v\nstacktrace:unlimited\n");

  TriggerPlan plan;
  TriggerPlan::Save sv;
  sv.variable = "v";
  sv.field = "next_pid";
  sv.spec.count = 3;
  plan.saves.push_back(sv);
  EXPECT_TRUE(book.saves_written(kSwitch, Names::kernel(), plan, {41}).empty());
  EXPECT_EQ(book.values().count("v"), 1u);  // declared by its save
  EXPECT_EQ(book.raw_triggers(dir, "# Available triggers:\n", [](int id) { return id == 41 ? 2u : 0u; }),
            "save:v=next_pid:count=2\n");
  EXPECT_EQ(book.planning_state().saves, (std::set<std::pair<std::string, std::string>>{{dir, "v"}}));
  TriggerPlan removal;
  sv.remove = true;
  removal.saves.push_back(sv);
  EXPECT_EQ(book.saves_written(kSwitch, Names::kernel(), removal, {}), std::vector<int>{41});
  EXPECT_FALSE(book.save(41));
}

}  // namespace
}  // namespace eventfs
