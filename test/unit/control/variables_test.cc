// Saved variables: the `variables` file's grammar, their place in filters,
// and the controller keeping kernel filters, triggers and save: captures in
// step with them (against the in-memory instance and a fake capture engine).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "control/captures.h"
#include "control/own_threads.h"
#include "control/controller.h"
#include "control/filter.h"
#include "control/variables.h"
#include "support/fake_instance.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

using testing::FakeInstance;
using testing::ResolvedFixture;

constexpr const char* kSwitch = "events/sched/sched_switch";
constexpr const char* kWakeup = "events/sched/sched_wakeup";

TEST(VariableChanges, SetDeclareAndRemoveOnePerLine) {
  auto parsed = parse_variable_changes("a=5\n b = -0x10 \n\nc\n!d\n", {});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::vector<VariableChange>& out = *parsed;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].kind, VariableChange::Kind::Set);
  EXPECT_EQ(out[0].name, "a");
  EXPECT_EQ(*out[0].value, 5);
  EXPECT_EQ(out[1].name, "b");
  EXPECT_EQ(*out[1].value, -16);
  EXPECT_EQ(out[2].kind, VariableChange::Kind::Declare);
  EXPECT_EQ(out[3].kind, VariableChange::Kind::Remove);
  EXPECT_EQ(out[3].name, "d");
  auto min = parse_variable_changes("m=-9223372036854775808", {});
  ASSERT_TRUE(min) << min.error().message;
  EXPECT_EQ(*(*min)[0].value, INT64_MIN);
}

TEST(VariableChanges, ALeadingZeroIsDecimalAndOnly0xMakesHex) {
  auto parsed = parse_variable_changes("o=010\no9=09\nz=0\nh=0X1f\nn=-010", {});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const std::vector<VariableChange>& out = *parsed;
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(*out[0].value, 10);
  EXPECT_EQ(*out[1].value, 9);
  EXPECT_EQ(*out[2].value, 0);
  EXPECT_EQ(*out[3].value, 31);
  EXPECT_EQ(*out[4].value, -10);
  for (const char* bad : {"x=0x", "x=0xg", "x=0x-1", "x=0b1", "x=1e3"})
    EXPECT_FALSE(parse_variable_changes(bad, {})) << bad;
}

TEST(VariableChanges, BadNamesAndValuesAreRefusedWithWhereTheyAre) {
  const std::set<std::string> reserved = {"prev_pid"};
  struct {
    const char* text;
    std::size_t pos;
  } bad[] = {
      {"", 0},
      {"common_pid=1", 0},
      {"a=1\nprev_pid=1", 4},
      {"if=1", 0},
      {"enable_event=1", 0},
      {"save=1", 0},
      {"1abc=1", 0},
      {"a-b=1", 0},
      {"a=", 2},
      {"a=12x", 2},
      {"a=9223372036854775808", 2},
      {"a=1\x01", 3},
      {"!", 1},
      {"a b", 0},
  };
  for (const auto& b : bad) {
    auto parsed = parse_variable_changes(b.text, reserved);
    ASSERT_FALSE(parsed) << b.text;
    const VariableError& err = parsed.error();
    EXPECT_EQ(err.pos, b.pos) << b.text << ": " << err.message;
    EXPECT_FALSE(err.message.empty());
  }
  EXPECT_NE(variable_name_problem(std::string(kMaxVariableName + 1, 'x'), {}), "");
  EXPECT_EQ(variable_name_problem(std::string(kMaxVariableName, 'x'), {}), "");
}

TEST(VariableText, ListsByNameWithUnsetOnes) {
  VariableValues v = {{"b", 7}, {"a", std::nullopt}, {"c", -1}};
  EXPECT_EQ(variables_text(v), "a unset\nb=7\nc=-1\n");
  const std::uint8_t bytes[8] = {0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  EXPECT_EQ(integer_from_bytes(bytes, 4, true), -2);
  EXPECT_EQ(integer_from_bytes(bytes, 4, false), 0xfffffffe);
  EXPECT_EQ(integer_from_bytes(bytes, 2, true), -2);
  EXPECT_EQ(integer_from_bytes(bytes, 1, false), 0xfe);
}

TEST(FilterVariables, ABareWordNamingAVariableBecomesItsValue) {
  FilterFieldMap fields = {{"pid", {"next_pid", false, {}}}};
  VariableValues vars = {{"mine", 42}, {"later", std::nullopt}};
  auto translate = [&](const char* text, const FilterFieldMap* f) {
    auto r = translate_filter(text, f, &vars);
    EXPECT_TRUE(r) << text << ": " << r.error().message;
    return r ? *r : TranslatedFilter{};
  };
  TranslatedFilter tf = translate("pid == mine && common_pid != mine", &fields);
  EXPECT_EQ(tf.raw, "next_pid == 42 && common_pid != 42");
  EXPECT_EQ(tf.variables, (std::set<std::string>{"mine"}));
  EXPECT_FALSE(tf.unset_variable);
  // A quoted word is a string, whatever it spells.
  tf = translate("pid == 1 || common_comm == \"mine\"", &fields);
  EXPECT_EQ(tf.raw, "next_pid == 1 || common_comm == \"mine\"");
  EXPECT_TRUE(tf.variables.empty());
  // While one is unset the kernel gets a condition nothing matches.
  tf = translate("pid == mine || pid == later", &fields);
  EXPECT_EQ(tf.raw, kNeverFilter);
  EXPECT_TRUE(tf.unset_variable);
  // Raw names: fields are not checked, only variables replaced.
  tf = translate("anything >= mine", nullptr);
  EXPECT_EQ(tf.raw, "anything >= 42");
  EXPECT_TRUE(names_a_variable("x == mine", vars));
  EXPECT_FALSE(names_a_variable("x == \"mine\" && y == 0xmine", vars));
  // A quote inside an unquoted value opens no string: the grammar reads
  // `4'` as the value and `mine` as the next one.
  EXPECT_TRUE(names_a_variable("x == 4' && y == mine", vars));
  // Text the grammar refuses is read word by word outside quotes.
  EXPECT_TRUE(names_a_variable("x == mine &&", vars));
  EXPECT_FALSE(names_a_variable("x == 'mine", vars));
}

class FakeCaptures final : public CaptureEngine {
 public:
  Result<int> arm(const CaptureSpec& spec) override {
    if (refuse) return fail(ENOSPC, "no more instances");
    armed[next] = spec;
    return next++;
  }
  void disarm(int id) override { armed.erase(id); }
  Status refilter(int id, const std::string& raw) override {
    armed.at(id).raw_filter = raw;
    return {};
  }
  std::optional<std::uint64_t> remaining(int id) const override { return armed.at(id).count; }

  std::map<int, CaptureSpec> armed;
  int next = 1;
  bool refuse = false;
};

class VariablesTest : public ::testing::Test {
 protected:
  VariablesTest() : fx("linux-6.18", testing::builtin_catalog()), ctl(fake, *fx.tracefs, fx.resolution) {
    ctl.set_captures(&captures);
  }
  std::size_t index(const std::string& name) const {
    for (std::size_t i = 0; i < fx.resolution.available.size(); ++i)
      if (fx.resolution.available[i].event->name == name) return i;
    throw std::runtime_error("no event " + name);
  }
  std::string variables() {
    std::string out;
    EXPECT_EQ(ctl.read_variables(out), 0);
    return out;
  }
  std::string read(int (Controller::*fn)(const ControlEvent&, std::string&), const std::string& ev) {
    std::string out;
    EXPECT_EQ((ctl.*fn)(index(ev), out), 0);
    return out;
  }
  std::string raw(const std::string& file) {
    std::string out;
    const EventName wakeup{"sched", "sched_wakeup"};
    EXPECT_EQ(file == "filter" ? ctl.read_filter(wakeup, out) : ctl.read_trigger(wakeup, out), 0);
    return out;
  }

  FakeInstance fake;
  FakeCaptures captures;
  ResolvedFixture fx;
  Controller ctl;
};

TEST_F(VariablesTest, TheFileSetsListsAndRemovesAllOrNothing) {
  EXPECT_EQ(variables(), "");
  ASSERT_EQ(ctl.write_variables("a=1\nb\n"), 0);
  EXPECT_EQ(variables(), "a=1\nb unset\n");
  // One bad line: nothing of the write happens.
  EXPECT_EQ(ctl.write_variables("c=3\nprev_pid=4\n"), EINVAL);
  EXPECT_EQ(variables(), "a=1\nb unset\n");
  EXPECT_NE(ctl.error_log().text().find("'prev_pid' is a field name"), std::string::npos) << ctl.error_log().text();
  EXPECT_EQ(ctl.write_variables("!zz"), ENOENT);
  ASSERT_EQ(ctl.write_variables("!a\nb=0x10"), 0);
  EXPECT_EQ(variables(), "b=16\n");
}

TEST_F(VariablesTest, AFilterNamingAVariableFollowsItsValueAndReadsBackByName) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_variables("target=7"), 0);
  ASSERT_EQ(ctl.write_filter(sw, "next_pid == target\n"), 0) << ctl.error_log().text();
  EXPECT_EQ(fake.filter(kSwitch), "next_pid == 7");
  EXPECT_EQ(read(&Controller::read_filter, "sched_switch"), "next_pid == target\n");
  ASSERT_EQ(ctl.write_variables("target=8"), 0);
  EXPECT_EQ(fake.filter(kSwitch), "next_pid == 8");
  EXPECT_EQ(read(&Controller::read_filter, "sched_switch"), "next_pid == target\n");
  ASSERT_EQ(ctl.write_variables("target"), 0);  // unset: nothing matches
  EXPECT_EQ(fake.filter(kSwitch), kNeverFilter);
  EXPECT_EQ(read(&Controller::read_filter, "sched_switch"), "next_pid == target\n");
  // In use: cannot be removed until the filter goes.
  EXPECT_EQ(ctl.write_variables("!target"), EBUSY);
  ASSERT_EQ(ctl.write_filter(sw, "0"), 0);
  EXPECT_EQ(ctl.write_variables("!target"), 0);
}

TEST_F(VariablesTest, TriggerConditionsAreRewrittenKeepingTheirCount) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_variables("who=3"), 0);
  ASSERT_EQ(ctl.write_trigger(sw, "traceoff:5 if prev_pid == who"), 0) << ctl.error_log().text();
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{"traceoff:count=5 if prev_pid == 3"}));
  ASSERT_EQ(ctl.write_variables("who=4"), 0);
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{"traceoff:count=5 if prev_pid == 4"}));
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"), "traceoff:count=5 if prev_pid == who\n");
  // The proposal's line, on a raw trigger file.
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_wakeup"}, "disable_event:sched:sched_switch if common_pid == who\n"), 0)
      << ctl.error_log().text();
  EXPECT_EQ(fake.triggers(kWakeup),
            (std::vector<std::string>{"disable_event:sched:sched_switch:unlimited if common_pid == 4"}));
  EXPECT_EQ(raw("trigger"), "disable_event:sched:sched_switch:unlimited if common_pid == who\n");
  ASSERT_EQ(ctl.write_variables("who=5"), 0);
  EXPECT_EQ(fake.triggers(kWakeup),
            (std::vector<std::string>{"disable_event:sched:sched_switch:unlimited if common_pid == 5"}));
  ASSERT_EQ(ctl.write_filter(EventName{"sched", "sched_wakeup"}, "pid == who"), 0);
  EXPECT_EQ(fake.filter(kWakeup), "pid == 5");
  EXPECT_EQ(raw("filter"), "pid == who\n");
}

TEST_F(VariablesTest, SaveArmsACaptureAndItsValueReachesTheConditions) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "save:last=next_pid:2 if prev_pid == 0"), 0) << ctl.error_log().text();
  ASSERT_EQ(captures.armed.size(), 1u);
  const CaptureSpec& spec = captures.armed.begin()->second;
  EXPECT_EQ(spec.system, "sched");
  EXPECT_EQ(spec.event, "sched_switch");
  EXPECT_EQ(spec.field.name, "next_pid");
  EXPECT_EQ(spec.raw_filter, "prev_pid == 0");
  EXPECT_EQ(spec.count, std::optional<std::uint64_t>(2));
  EXPECT_EQ(variables(), "last unset\n");
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"), "save:last=next_pid:count=2 if prev_pid == 0\n");
  EXPECT_TRUE(fake.triggers(kSwitch).empty()) << "nothing of a save goes to the kernel's trigger file";

  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_wakeup"}, "traceon if common_pid == last"), 0);
  EXPECT_EQ(fake.triggers(kWakeup), (std::vector<std::string>{"traceon:unlimited if common_pid < 0"}));
  ctl.captured({{"last", 1234, 0}}, nullptr);
  EXPECT_EQ(variables(), "last=1234\n");
  EXPECT_EQ(fake.triggers(kWakeup), (std::vector<std::string>{"traceon:unlimited if common_pid == 1234"}));
  EXPECT_EQ(raw("trigger"), "traceon:unlimited if common_pid == last\n");

  EXPECT_EQ(ctl.write_trigger(sw, "save:last=prev_pid"), EEXIST);
  EXPECT_EQ(ctl.write_variables("!last"), EBUSY);
  ASSERT_EQ(ctl.write_trigger(sw, "!save:last=next_pid"), 0);
  EXPECT_TRUE(captures.armed.empty());
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"), FakeInstance::kHeader);
}

TEST_F(VariablesTest, ARefusedWriteLeavesNoSaveArmed) {
  const std::size_t sw = index("sched_switch");
  // The second command names no event: the whole write is refused.
  EXPECT_EQ(ctl.write_trigger(sw, "save:v=next_pid enable_event:no_such_event"), EINVAL);
  EXPECT_TRUE(captures.armed.empty());
  EXPECT_EQ(variables(), "");
  // The engine refuses: the kernel got nothing either.
  captures.refuse = true;
  EXPECT_EQ(ctl.write_trigger(sw, "traceon save:v=next_pid"), ENOSPC);
  EXPECT_TRUE(fake.triggers(kSwitch).empty());
  captures.refuse = false;
  // Not an integer, computed, unknown, a bad name.
  EXPECT_EQ(ctl.write_trigger(sw, "save:v=prev_comm"), EINVAL);
  EXPECT_EQ(ctl.write_trigger(sw, "save:v=nope"), EINVAL);
  EXPECT_EQ(ctl.write_trigger(sw, "save:next_pid=prev_pid"), EINVAL);
  EXPECT_EQ(ctl.write_trigger(sw, "save:v"), EINVAL);
  EXPECT_TRUE(captures.armed.empty());
}

TEST_F(VariablesTest, ABatchOfCapturesRewritesOnceWithTheLastValues) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "save:a=next_pid\nsave:b=prev_pid"), 0) << ctl.error_log().text();
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_wakeup"}, "traceon if common_pid == a && pid == b"), 0)
      << ctl.error_log().text();
  std::vector<std::string> written;
  fake.before_write = [&](const std::string& rel) { written.push_back(rel); };
  ctl.captured({{"a", 11, 1}, {"b", 22, 2}}, nullptr);
  EXPECT_EQ(variables(), "a=11\nb=22\n");
  EXPECT_EQ(fake.triggers(kWakeup), (std::vector<std::string>{"traceon:unlimited if common_pid == 11 && pid == 22"}));
  // One removal and one new trigger for the two values together.
  EXPECT_EQ(written.size(), 2u);
  // The same values again: nothing to rewrite.
  written.clear();
  ctl.captured({{"a", 11, 3}}, nullptr);
  EXPECT_TRUE(written.empty());
}

TEST_F(VariablesTest, ACaptureArrivingWhileStoppingChangesTheValueButNotTheKernel) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "save:a=next_pid"), 0);
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_wakeup"}, "traceon if common_pid == a"), 0);
  ctl.captured({{"a", 5, 1}}, [] { return true; });
  EXPECT_EQ(variables(), "a=5\n");
  EXPECT_EQ(fake.triggers(kWakeup), (std::vector<std::string>{"traceon:unlimited if common_pid < 0"}));
}

TEST_F(VariablesTest, ASaveAndAConditionNamingItInOneWriteAreConnected) {
  const std::size_t sw = index("sched_switch");
  ASSERT_EQ(ctl.write_trigger(sw, "save:last=next_pid\ntraceoff if prev_pid == last"), 0) << ctl.error_log().text();
  EXPECT_EQ(variables(), "last unset\n");
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{std::string("traceoff:unlimited if ") + kNeverFilter}));
  ctl.captured({{"last", 42, 1}}, nullptr);
  EXPECT_EQ(fake.triggers(kSwitch), (std::vector<std::string>{"traceoff:unlimited if prev_pid == 42"}));
  EXPECT_EQ(read(&Controller::read_trigger, "sched_switch"),
            "traceoff:unlimited if prev_pid == last\nsave:last=next_pid:unlimited\n");
  // The same on a raw trigger file.
  ASSERT_EQ(ctl.write_trigger(EventName{"sched", "sched_wakeup"}, "save:w=pid\ntraceon if pid == w"), 0)
      << ctl.error_log().text();
  ctl.captured({{"w", 7, 2}}, nullptr);
  EXPECT_EQ(fake.triggers(kWakeup), (std::vector<std::string>{"traceon:unlimited if pid == 7"}));
}

TEST_F(VariablesTest, ASaveLeavesOutRecordsNamingTheDaemonsThreadsInAnyTaskField) {
  ASSERT_EQ(ctl.write_trigger(index("sched_switch"), "save:v=next_pid if prev_pid == 0"), 0);
  const CaptureSpec& spec = captures.armed.begin()->second;
  std::vector<std::string> names;
  for (const auto& f : spec.task_fields) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"common_pid", "prev_pid", "next_pid"}));
  EXPECT_EQ(capture_filter(spec.raw_filter, spec.task_fields, {5, 9}),
            "(prev_pid == 0) && common_pid != 5 && common_pid != 9 && prev_pid != 5 && prev_pid != 9 && "
            "next_pid != 5 && next_pid != 9");
  EXPECT_EQ(capture_filter("", spec.task_fields, {5}), "common_pid != 5 && prev_pid != 5 && next_pid != 5");
  EXPECT_EQ(capture_filter("a == 1", {}, {5}), "a == 1");
  EXPECT_EQ(capture_filter("", {}, {}), "");
  const std::vector<int> own = own_thread_ids();
  EXPECT_TRUE(std::binary_search(own.begin(), own.end(), static_cast<int>(::gettid()))) << "this thread is one";
}

// Where a condition can go: a filter and a traceon trigger on each raw
// event, as (system/event, file).
using UsePlace = std::pair<std::string, std::string>;
std::vector<UsePlace> use_places(const ResolvedFixture& fx) {
  std::vector<UsePlace> places;
  for (const auto& sys : fx.tracefs->systems())
    for (const auto& ev : fx.tracefs->events(sys)) {
      places.emplace_back(sys + "/" + ev, "filter");
      places.emplace_back(sys + "/" + ev, "trigger");
    }
  return places;
}

// Writes `condition` at `u`: as the filter, or as a traceon trigger's.
int write_condition(Controller& ctl, const UsePlace& u, const std::string& condition) {
  const std::string sys = u.first.substr(0, u.first.find('/')), ev = u.first.substr(u.first.find('/') + 1);
  return u.second == "filter" ? ctl.write_filter(EventName{sys, ev}, condition)
                              : ctl.write_trigger(EventName{sys, ev}, "traceon if " + condition);
}

TEST_F(VariablesTest, ConditionsNamingVariablesAreBoundedInNumber) {
  ASSERT_EQ(ctl.write_variables("v=1"), 0);
  // Conditions naming v, until the limit.
  const std::vector<UsePlace> uses = use_places(fx);
  ASSERT_GT(uses.size(), kMaxVariableUses);
  auto write = [&](const UsePlace& u, const std::string& condition) { return write_condition(ctl, u, condition); };
  for (std::size_t i = 0; i < kMaxVariableUses; ++i)
    ASSERT_EQ(write(uses[i], "common_pid == v"), 0) << uses[i].first << " " << ctl.error_log().text();
  EXPECT_EQ(write(uses[kMaxVariableUses], "common_pid == v"), ENOSPC);
  EXPECT_NE(ctl.error_log().text().find("Too many conditions naming variables (the limit is 32"), std::string::npos)
      << ctl.error_log().text();
  // Without a variable, and in place of an existing use, a condition is taken.
  EXPECT_EQ(write(uses[kMaxVariableUses], "common_pid == 1"), 0);
  EXPECT_EQ(write(uses[0], "common_pid != v"), 0);
}

// Two writes to different events, each taking the last place under the
// limit: the second waits for the first to be recorded, and is refused.
TEST_F(VariablesTest, TwoWritesCannotBothTakeTheLastPlace) {
  ASSERT_EQ(ctl.write_variables("v=1"), 0);
  const std::vector<UsePlace> uses = use_places(fx);
  ASSERT_GT(uses.size(), kMaxVariableUses);
  auto write = [&](const UsePlace& u) { return write_condition(ctl, u, "common_pid == v"); };
  for (std::size_t i = 0; i + 1 < kMaxVariableUses; ++i) ASSERT_EQ(write(uses[i]), 0) << ctl.error_log().text();
  const auto& last = uses[kMaxVariableUses - 1];
  const auto& over = uses[kMaxVariableUses];
  ASSERT_NE(last.first, over.first) << "two different events";
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<bool> in_write{false};
  fake.before_write = [&](const std::string& rel) {
    if (rel != "events/" + last.first + "/" + last.second) return;
    in_write = true;
    std::lock_guard wait(gate);
  };
  auto first = std::async(std::launch::async, [&] { return write(last); });
  for (int i = 0; i < 2000 && !in_write; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!in_write) {
    closed.unlock();  // (or `first` would wait for the gate when it goes)
    FAIL() << "the first write did not reach the kernel";
  }
  auto second = std::async(std::launch::async, [&] { return write(over); });
  const bool waited = second.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout;
  closed.unlock();
  EXPECT_EQ(first.get(), 0);
  EXPECT_EQ(second.get(), ENOSPC) << "both took the last place";
  EXPECT_TRUE(waited) << "the second counted while the first was not yet recorded";
}

TEST_F(VariablesTest, WithoutACaptureEngineSaveIsRefused) {
  ctl.set_captures(nullptr);
  EXPECT_EQ(ctl.write_trigger(index("sched_switch"), "save:v=next_pid"), EOPNOTSUPP);
}

}  // namespace
}  // namespace eventfs
