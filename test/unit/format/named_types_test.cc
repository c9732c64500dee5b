// types/: the named types of the stable formats, with enumerations whose maps
// come from each fixture kernel's print fmt tables.
#include <gtest/gtest.h>

#include "support/fixture_kernels.h"
#include "format/named_types.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;
using testing::fixture_kernels;

ScalarType type(const char* name) { return *stable_type(name); }

const TypeUse* use_of(const std::vector<TypeUse>& uses, const std::string& event, const std::string& field) {
  for (const auto& u : uses)
    if (u.event == event && u.field == field) return &u;
  return nullptr;
}

TEST(NamedTypes, AnIntegerTypeIsItsSizeSignAndAlignment) {
  auto files = named_type_files({{"e", "a", type("pid_t"), "", {}},
                                 {"e", "b", type("u64"), "", {}},
                                 {"f", "c", type("pid_t"), "", {}}});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files["pid_t"], "parent = integer;\nsize = 32;\nsigned = true;\nalign = 4;\n");
  EXPECT_EQ(files["u64"], "parent = integer;\nsize = 64;\nsigned = false;\nalign = 8;\n");
}

TEST(NamedTypes, AnEnumerationJoinsTheMapsOfItsFieldsAndListsThem) {
  auto files = named_type_files({{"in", "vec", type("unsigned int"), "vec_t", {{0, "HI"}, {1, "TIMER"}}},
                                 {"out", "vec", type("unsigned int"), "vec_t", {{1, "OTHER"}, {2, "NET\"TX\n"}}}});
  EXPECT_EQ(files["vec_t"],
            "parent = enum;\nsize = 32;\nsigned = false;\nalign = 4;\n"
            "map = {\n\t{ 0, \"HI\" },\n\t{ 1, \"TIMER\" },\n\t{ 2, \"NET\\\"TX\\x0a\" },\n};\n"
            "fields = {\n\tin.vec,\n\tout.vec,\n};\n");
  // The enumeration's integer type is a named type of its own too.
  EXPECT_EQ(files.count("unsigned int"), 1u);
}

TEST(NamedTypes, SymbolicValuesAreReadWithTheFieldsWidthAndSign) {
  const FlagTable table{{~std::uint64_t{0}, "ERR"}, {3, "OK"}, {0xffu, "BYTE"}};
  EXPECT_EQ(symbolic_enum_map(table, type("int")), (EnumMap{{-1, "ERR"}, {3, "OK"}, {255, "BYTE"}}));
  EXPECT_EQ(symbolic_enum_map(table, type("u32")), (EnumMap{{0xffffffffll, "ERR"}, {3, "OK"}, {255, "BYTE"}}));
  EXPECT_EQ(symbolic_enum_map(table, type("s8")), (EnumMap{{-1, "ERR"}, {3, "OK"}}))
      << "0xff is -1 in a signed byte: the first name keeps it";
}

TEST(NamedTypes, TaskStateValuesAreTheLettersATaskStateFieldHolds) {
  EXPECT_EQ(task_state_enum_map({{0, "?"}, {1, "S"}, {2, "D"}, {4, "Dx"}, {8, "I"}}),
            (EnumMap{{'R', "R"}, {'S', "S"}, {'D', "D"}, {'I', "I"}}));
}

// The default catalog on each fixture kernel: softirq vectors named where the
// kernel's print fmt gives numbers, task states from its __print_flags table.
TEST(NamedTypes, EnumMapsComeFromEachKernelsPrintFmt) {
  const EnumMap softirqs{{0, "HI"},      {1, "TIMER"},   {2, "NET_TX"}, {3, "NET_RX"},  {4, "BLOCK"},
                         {5, "IRQ_POLL"}, {6, "TASKLET"}, {7, "SCHED"},  {8, "HRTIMER"}, {9, "RCU"}};
  for (const auto& kernel : fixture_kernels()) {
    ResolvedFixture fx(kernel);
    auto uses = type_uses(fx.resolution);
    const TypeUse* vec = use_of(uses, "softirq_entry", "vec");
    ASSERT_NE(vec, nullptr) << kernel;
    EXPECT_EQ(vec->enum_name, "softirq_vec");
    // 2.6.36 printed the enum constants' names (HI_SOFTIRQ), not their values.
    if (kernel == "linux-2.6.36")
      EXPECT_TRUE(vec->map.empty()) << kernel;
    else
      EXPECT_EQ(vec->map, softirqs) << kernel;
    const TypeUse* state = use_of(uses, "sched_switch", "prev_state");
    ASSERT_NE(state, nullptr) << kernel;
    EXPECT_EQ(state->enum_name, "task_state");
    ASSERT_FALSE(state->map.empty());
    EXPECT_EQ(state->map[0], (std::pair<std::int64_t, std::string>{'R', "R"}));
    // 32bit-alt swaps S and D: the value of 'D' is still 'D', its position follows the table.
    const std::string second = kernel == "linux-32bit-alt" ? "D" : "S";
    ASSERT_GE(state->map.size(), 2u);
    EXPECT_EQ(state->map[1], (std::pair<std::int64_t, std::string>{second[0], second})) << kernel;
    const TypeUse* pid = use_of(uses, "sched_switch", "prev_pid");
    ASSERT_NE(pid, nullptr);
    EXPECT_TRUE(pid->enum_name.empty());
    EXPECT_TRUE(pid->map.empty());
  }
}

}  // namespace
}  // namespace eventfs
