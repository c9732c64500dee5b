// The type model and the format language.
#include <gtest/gtest.h>

#include "format/format_text.h"
#include "format/stable_layout.h"
#include "format/type_model.h"

namespace eventfs {
namespace {

ScalarType type(const char* n) {
  auto t = stable_type(n);
  EXPECT_TRUE(t.has_value()) << n;
  return t.value_or(ScalarType{});
}

TEST(TypeModel, SizesInBitsAlignInBytesAndSign) {
  EXPECT_EQ(type("char"), (ScalarType{"char", 8, 1, true}));  // x86: char is signed
  EXPECT_EQ(type("unsigned char"), (ScalarType{"unsigned char", 8, 1, false}));
  EXPECT_EQ(type("pid_t"), (ScalarType{"pid_t", 32, 4, true}));
  EXPECT_EQ(type("int"), (ScalarType{"int", 32, 4, true}));
  EXPECT_EQ(type("unsigned int"), (ScalarType{"unsigned int", 32, 4, false}));
  EXPECT_EQ(type("long"), (ScalarType{"long", 64, 8, true}));
  EXPECT_EQ(type("u64"), (ScalarType{"u64", 64, 8, false}));
  EXPECT_EQ(type("s16"), (ScalarType{"s16", 16, 2, true}));
  EXPECT_EQ(type("bool"), (ScalarType{"bool", 8, 1, false}));
  EXPECT_EQ(type("dev_t"), (ScalarType{"dev_t", 32, 4, false}));  // the kernel's dev_t
}

TEST(TypeModel, SpellingsAreNormalized) {
  EXPECT_EQ(type("unsigned   int").name, "unsigned int");
  EXPECT_EQ(type("unsigned").name, "unsigned int");
  EXPECT_EQ(type("long int").name, "long");
  EXPECT_EQ(type("unsigned long long int").name, "unsigned long long");
  EXPECT_EQ(type("short int").name, "short");
  EXPECT_EQ(type("signed int").name, "int");
  EXPECT_EQ(type("signed char").name, "signed char");
}

TEST(TypeModel, UnknownTypesAreRefused) {
  for (const char* n : {"float", "double", "struct foo", "void *", "", "cpumask_t", "char[16]"})
    EXPECT_FALSE(stable_type(n).has_value()) << n;
}

TEST(TypeModel, RawAlignmentIsNaturalAndCappedByTheElementSize) {
  EXPECT_EQ(raw_natural_align("long", 8), 8u);
  EXPECT_EQ(raw_natural_align("long", 4), 4u);  // a 32-bit kernel's long
  EXPECT_EQ(raw_natural_align("char", 1), 1u);
  EXPECT_EQ(raw_natural_align("cpumask_t", 8), 8u);
  EXPECT_EQ(raw_natural_align("struct odd", 12), 1u);
  EXPECT_EQ(raw_natural_align("u64", 8), 8u);
}

TEST(FormatText, RendersTheRfcForms) {
  FormatField comm{"prev_comm", type("char"), FieldShape::Array, 16};
  FormatField pid{"prev_pid", type("pid_t")};
  EXPECT_EQ(render_format_line(comm),
            "\tarray:prev_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n");
  EXPECT_EQ(render_format_line(pid), "\tfield:prev_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n");
  EXPECT_EQ(render_format({pid, comm}), render_format_line(pid) + render_format_line(comm));
}

TEST(FormatText, RendersTheDynarrayExtension) {
  FormatField f{"comm", ScalarType{"char", 8, 1, false}, FieldShape::DynArray, 0, DynLoc::DataLoc};
  EXPECT_EQ(render_format_line(f), "\tdynarray:comm\ttype:char\tsize:8\tloc:data_loc\talign:1\tsigned:0;\n");
  f.loc = DynLoc::RelLoc;
  EXPECT_NE(render_format_line(f).find("\tloc:rel_loc\t"), std::string::npos);
  f.loc = DynLoc::Tail;
  EXPECT_NE(render_format_line(f).find("\tloc:tail\t"), std::string::npos);
}

TEST(StableLayout, FieldsAlignLikeACStruct) {
  // sched_switch: char[16], pid_t, char, char[16], pid_t
  std::vector<FormatField> f = {
      {"prev_comm", type("char"), FieldShape::Array, 16}, {"prev_pid", type("pid_t")},
      {"prev_state", type("char")}, {"next_comm", type("char"), FieldShape::Array, 16},
      {"next_pid", type("pid_t")}};
  RecordLayout l = layout_of(f);
  ASSERT_EQ(l.slots.size(), 5u);
  EXPECT_EQ(l.slots[0].offset, 0u);
  EXPECT_EQ(l.slots[0].size, 16u);
  EXPECT_EQ(l.slots[1].offset, 16u);
  EXPECT_EQ(l.slots[2].offset, 20u);
  EXPECT_EQ(l.slots[3].offset, 21u);
  EXPECT_EQ(l.slots[4].offset, 40u);  // 37 rounded up to 4
  EXPECT_EQ(l.size, 44u);
  EXPECT_EQ(l.align, 4u);
}

TEST(StableLayout, SizeRoundsUpToTheLargestAlignment) {
  RecordLayout l = layout_of({{"a", type("u64")}, {"b", type("char")}});
  EXPECT_EQ(l.slots[1].offset, 8u);
  EXPECT_EQ(l.size, 16u);
  EXPECT_EQ(l.align, 8u);
}

}  // namespace
}  // namespace eventfs
