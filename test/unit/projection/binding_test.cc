// Source resolution: each stable event binds to the raw event and fields of
// every fixture kernel that can supply it, and says why when it cannot.
#include <gtest/gtest.h>

#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;
using testing::fixture_kernels;

const FieldBinding& field(const Binding& b, const std::string& name) {
  for (const auto& f : b.fields)
    if (f.stable->decl.name == name) return f;
  throw std::runtime_error("no field " + name);
}

TEST(Binding, EveryCatalogEventBindsOnEveryFixtureThatHasItsRawEvent) {
  for (const auto& kernel : fixture_kernels()) {
    ResolvedFixture fx(kernel);
    for (const auto& [name, reason] : fx.resolution.unavailable) {
      // The only catalog event a fixture may lack is one its kernel did not have.
      EXPECT_EQ(kernel + "/" + name, "linux-2.6.36/sched_process_exec") << reason;
    }
    EXPECT_EQ(fx.resolution.available.size() + fx.resolution.unavailable.size(), fx.catalog.events.size());
  }
}

TEST(Binding, MissingRawEventGivesAReason) {
  ResolvedFixture fx("linux-2.6.36");
  EXPECT_EQ(fx.binding("sched_process_exec"), nullptr);
  EXPECT_EQ(fx.reason("sched_process_exec"), "this kernel has no raw event sched:sched_process_exec");
}

TEST(Binding, CommIsAFixedArrayOrADataLocStringDependingOnTheKernel) {
  struct {
    const char* kernel;
    FieldShape shape;
  } cases[] = {{"linux-2.6.36", FieldShape::Array},
               {"linux-6.18", FieldShape::Array},
               {"linux-32bit-alt", FieldShape::DynArray}};
  for (const auto& c : cases) {
    ResolvedFixture fx(c.kernel);
    const Binding* b = fx.binding("sched_switch");
    ASSERT_NE(b, nullptr) << c.kernel << ": " << fx.reason("sched_switch");
    const FieldBinding& comm = field(*b, "prev_comm");
    EXPECT_EQ(comm.conversion, Conversion::Bytes) << c.kernel;
    EXPECT_EQ(comm.raw.shape, c.shape) << c.kernel;
    if (c.shape == FieldShape::Array) EXPECT_EQ(comm.raw.count, 16u) << c.kernel;
    if (c.shape == FieldShape::DynArray) EXPECT_EQ(comm.raw.loc, DynLoc::DataLoc) << c.kernel;
  }
  // sched_migrate_task's comm became __data_loc in 6.x.
  ResolvedFixture now("linux-6.18");
  EXPECT_EQ(field(*now.binding("sched_migrate_task"), "comm").raw.shape, FieldShape::DynArray);
}

TEST(Binding, RawOffsetsFollowEachKernelsCommonHeader) {
  // The payload starts after 12 bytes of common fields on 2.6.36 (lock_depth)
  // and on the 32-bit kernel (two extra fields), 8 bytes on 6.18.
  EXPECT_EQ(field(*ResolvedFixture("linux-2.6.36").binding("sched_switch"), "prev_comm").raw.offset, 12u);
  EXPECT_EQ(field(*ResolvedFixture("linux-6.18").binding("sched_switch"), "prev_comm").raw.offset, 8u);
  EXPECT_EQ(field(*ResolvedFixture("linux-32bit-alt").binding("sched_switch"), "prev_comm").raw.offset, 12u);
}

TEST(Binding, TaskStateTablesComeFromEachKernelsPrintFlags) {
  FlagTable old_table = {{1, "S"}, {2, "D"}, {4, "T"}, {8, "t"}, {16, "Z"}, {32, "X"}, {64, "x"}, {128, "W"}};
  FlagTable now_table = {{1, "S"}, {2, "D"}, {4, "T"}, {8, "t"}, {16, "X"}, {32, "Z"}, {64, "P"}, {128, "I"}};
  FlagTable alt_table = {{1, "D"},  {2, "S"},  {4, "T"},   {8, "t"},  {16, "K"},
                         {32, "X"}, {64, "Z"}, {128, "P"}, {256, "I"}};
  struct {
    const char* kernel;
    const FlagTable& table;
  } cases[] = {{"linux-2.6.36", old_table}, {"linux-6.18", now_table}, {"linux-32bit-alt", alt_table}};
  for (const auto& c : cases) {
    ResolvedFixture fx(c.kernel);
    const FieldBinding& st = field(*fx.binding("sched_switch"), "prev_state");
    EXPECT_EQ(st.conversion, Conversion::TaskState) << c.kernel;
    EXPECT_EQ(st.states, c.table) << c.kernel;
  }
}

TEST(Binding, IntegerWidthsFollowTheKernel) {
  ResolvedFixture alt("linux-32bit-alt");
  const Binding* enter = alt.binding("sys_enter");
  ASSERT_NE(enter, nullptr);
  EXPECT_EQ(field(*enter, "id").raw.elem_bytes, 4u);
  EXPECT_EQ(field(*enter, "id").conversion, Conversion::Integer);
  EXPECT_EQ(field(*enter, "args").conversion, Conversion::IntegerArray);
  EXPECT_EQ(field(*enter, "args").raw.elem_bytes, 4u);
  EXPECT_EQ(field(*enter, "args").raw.count, 6u);
  ResolvedFixture now("linux-6.18");
  EXPECT_EQ(field(*now.binding("sys_enter"), "id").raw.elem_bytes, 8u);
  // The stable record is the same on both.
  EXPECT_EQ(field(*enter, "args").slot.offset, field(*now.binding("sys_enter"), "args").slot.offset);
}

TEST(Binding, FieldAlternativesPickTheNameTheKernelHas) {
  EXPECT_EQ(field(*ResolvedFixture("linux-2.6.36").binding("block_rq_complete"), "error").raw.name, "errors");
  EXPECT_EQ(field(*ResolvedFixture("linux-6.18").binding("block_rq_complete"), "error").raw.name, "error");
}

Catalog parse(const char* text) {
  Catalog c;
  if (auto parsed = parse_catalog(text, "t.catalog", c); !parsed) throw std::runtime_error(parsed.error().str());
  return c;
}

TEST(Binding, RawEventAlternativesTryEachInTurn) {
  ResolvedFixture fx("linux-6.18", parse(R"(
STABLE_EVENT(switchy, sched:no_such_event | sched:sched_wakeup | sched:sched_switch, id=1,
	__field(pid_t, pid) = prev_pid | pid
	__field(pid_t, who) = common_pid
))"));
  const Binding* b = fx.binding("switchy");
  ASSERT_NE(b, nullptr) << fx.reason("switchy");
  EXPECT_EQ(b->raw.name, "sched_wakeup");
  EXPECT_EQ(field(*b, "pid").raw.name, "pid");
  EXPECT_EQ(field(*b, "who").raw.name, "common_pid");
  EXPECT_EQ(field(*b, "who").raw.offset, 4u);
}

TEST(Binding, ReasonsSayWhatIsMissingOrIncompatible) {
  ResolvedFixture fx("linux-6.18", parse(R"(
STABLE_EVENT(no_field, sched:sched_switch, id=1, __field(int, x) = nope | neither)
STABLE_EVENT(array_into_int, sched:sched_switch, id=2, __field(int, x) = prev_comm)
STABLE_EVENT(int_into_string, sched:sched_switch, id=3, __array(char, x, 16) = prev_pid)
STABLE_EVENT(no_flags, sched:sched_wakeup, id=4, __field(char, x) = task_state(prio))
STABLE_EVENT(state_of_array, sched:sched_switch, id=5, __field(char, x) = task_state(prev_comm))
STABLE_EVENT(no_event, nosys:noevent, id=6, __field(int, x) = x)
)"));
  EXPECT_TRUE(fx.resolution.available.empty());
  EXPECT_EQ(fx.reason("no_field"), "field x: sched:sched_switch has no field 'nope'");
  EXPECT_EQ(fx.reason("array_into_int"),
            "field x: 'prev_comm' of sched:sched_switch is an array char[16], which cannot supply int x");
  EXPECT_EQ(fx.reason("int_into_string"),
            "field x: 'prev_pid' of sched:sched_switch is a 4-byte pid_t, which cannot supply char[16] x");
  EXPECT_NE(fx.reason("no_flags").find("__print_flags() table"), std::string::npos) << fx.reason("no_flags");
  EXPECT_NE(fx.reason("state_of_array").find("needs an integer"), std::string::npos);
  EXPECT_EQ(fx.reason("no_event"), "this kernel has no raw event nosys:noevent");
}

TEST(Binding, StableLayoutIsTheSameOnEveryKernel) {
  std::vector<std::vector<std::size_t>> offsets;
  for (const auto& kernel : fixture_kernels()) {
    ResolvedFixture fx(kernel);
    std::vector<std::size_t> o;
    for (const auto& b : fx.resolution.available)
      for (const auto& f : b.fields) o.push_back(f.slot.offset);
    if (kernel != "linux-2.6.36") offsets.push_back(o);  // 2.6.36 lacks one event
  }
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_EQ(offsets[0], offsets[1]);
}

}  // namespace
}  // namespace eventfs
