// Raw formats of the fixture kernels, parsed with libtraceevent and rendered
// in the new format language.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "support/fixture_kernels.h"
#include "mount/mount_tree.h"
#include "tracefs/raw_format_parser.h"

namespace eventfs {
namespace {

using testing::fixture_dir;
using testing::fixture_kernels;

std::string raw_text(const std::string& kernel, const std::string& sys, const std::string& ev) {
  auto t = open_tracefs_dir(fixture_dir(kernel));
  Result<std::string> text = raw_format_text(*t, sys, ev);
  EXPECT_TRUE(text) << kernel << " " << sys << ":" << ev << ": " << text.reason();
  return text ? *text : std::string();
}

TEST(RawFormat, EveryFixtureFormatParsesAndRendersEveryField) {
  for (const auto& kernel : fixture_kernels()) {
    auto t = open_tracefs_dir(fixture_dir(kernel));
    int events = 0;
    for (const auto& sys : t->systems()) {
      for (const auto& ev : t->events(sys)) {
        auto text = t->read_format(sys, ev);
        ASSERT_TRUE(text) << text.reason();
        auto parsed = parse_raw_format(sys, *text);
        ASSERT_TRUE(parsed) << kernel << " " << sys << ":" << ev << ": " << parsed.reason();
        const RawEvent& raw = *parsed;
        EXPECT_EQ(raw.name, ev);
        EXPECT_FALSE(raw.fields.empty()) << ev;
        std::string rendered = render_format(raw_format_fields(raw));
        EXPECT_EQ(static_cast<std::size_t>(std::count(rendered.begin(), rendered.end(), '\n')),
                  raw.fields.size());
        EXPECT_EQ(rendered.find("common_"), std::string::npos) << "common fields are not part of the format";
        ++events;
      }
    }
    EXPECT_GE(events, 16) << kernel;
  }
}

TEST(RawFormat, FixedArraysIncludingSymbolicLengths) {
  // 2.6.36 printed char prev_comm[TASK_COMM_LEN]; the count comes from the size.
  std::string old = raw_text("linux-2.6.36", "sched", "sched_switch");
  EXPECT_NE(old.find("\tarray:prev_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"), std::string::npos) << old;
  EXPECT_NE(old.find("\tfield:prev_state\ttype:long\tsize:64\talign:8\tsigned:1;\n"), std::string::npos) << old;
  std::string now = raw_text("linux-6.18", "sched", "sched_switch");
  EXPECT_NE(now.find("\tarray:prev_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:0;\n"), std::string::npos) << now;
  std::string args = raw_text("linux-6.18", "raw_syscalls", "sys_enter");
  EXPECT_EQ(args,
            "\tfield:id\ttype:long\tsize:64\talign:8\tsigned:1;\n"
            "\tarray:args\ttype:unsigned long\tsize:64\tcount:6\talign:8\tsigned:0;\n");
}

TEST(RawFormat, DynamicArraysUseTheExtensionKeyword) {
  EXPECT_EQ(raw_text("linux-6.18", "sched", "sched_migrate_task"),
            "\tdynarray:comm\ttype:char\tsize:8\tloc:data_loc\talign:1\tsigned:0;\n"
            "\tfield:pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
            "\tfield:prio\ttype:int\tsize:32\talign:4\tsigned:1;\n"
            "\tfield:orig_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n"
            "\tfield:dest_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n");
  EXPECT_EQ(raw_text("linux-6.18", "ftrace", "print"),
            "\tfield:ip\ttype:unsigned long\tsize:64\talign:8\tsigned:0;\n"
            "\tdynarray:buf\ttype:char\tsize:8\tloc:tail\talign:1\tsigned:0;\n");
}

TEST(RawFormat, A32BitKernelsLongIs32Bits) {
  std::string alt = raw_text("linux-32bit-alt", "sched", "sched_switch");
  EXPECT_NE(alt.find("\tfield:prev_state\ttype:long\tsize:32\talign:4\tsigned:1;\n"), std::string::npos) << alt;
  EXPECT_NE(alt.find("\tdynarray:prev_comm\ttype:char\tsize:8\tloc:data_loc\talign:1\tsigned:0;\n"),
            std::string::npos) << alt;
}

TEST(RawFormat, RelLocIsRecognised) {
  std::string text =
      "name: rel\nID: 9\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:__rel_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:u64 value;\toffset:16;\tsize:8;\tsigned:0;\n\n"
      "print fmt: \"%s %llu\", __get_rel_str(name), REC->value\n";
  auto raw = parse_raw_format("test", text);
  ASSERT_TRUE(raw) << raw.reason();
  EXPECT_EQ(render_format(raw_format_fields(*raw)),
            "\tdynarray:name\ttype:char\tsize:8\tloc:rel_loc\talign:1\tsigned:0;\n"
            "\tfield:value\ttype:u64\tsize:64\talign:8\tsigned:0;\n");
}

TEST(RawFormat, UnparsableFormatIsRefusedWithAReason) {
  auto raw = parse_raw_format("x", "this is not a format file\n");
  ASSERT_FALSE(raw);
  EXPECT_EQ(raw.code(), EINVAL);
  EXPECT_NE(raw.reason().find("libtraceevent"), std::string::npos) << raw.reason();
}

// Two FUSE workers may look up two events at once: parses on several
// threads give what one thread alone gives (libtraceevent's tokenizer has
// file-scope state; under TSan a missing lock is also a report).
// Name, fields and decoding tables of a parsed event, as one string.
std::string describe(const RawEvent& raw) {
  std::string out = raw.name + "\n" + render_format(raw_format_fields(raw));
  for (const auto* tables : {&raw.print_flags, &raw.print_symbols})
    for (const auto& [field, table] : *tables)
      for (const auto& [value, name] : table) out += field + " " + std::to_string(value) + " " + name + "\n";
  return out;
}

// A format whose flag table's values are expressions: libtraceevent
// evaluates each into one static buffer.
std::string shifted_flags_format() {
  std::string text =
      "name: shifted\nID: 7\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned long flags;\toffset:8;\tsize:8;\tsigned:0;\n\n"
      "print fmt: \"%s\", __print_flags(REC->flags, \"|\"";
  for (int bit = 0; bit < 40; ++bit) text += ", { (1UL << " + std::to_string(bit) + "), \"F" + std::to_string(bit) + "\" }";
  return text + ")\n";
}

// Two FUSE workers may look up two events at once: parses on several
// threads give what one thread alone gives (libtraceevent keeps parse state
// in file-scope variables; under TSan a missing lock is also a report).
TEST(RawFormat, ParsesOnSeveralThreadsAtOnceGiveWhatOneThreadGives) {
  std::vector<std::pair<std::string, std::string>> texts{{"test", shifted_flags_format()}};
  for (const auto& kernel : fixture_kernels()) {
    auto t = open_tracefs_dir(fixture_dir(kernel));
    for (const auto& sys : t->systems())
      for (const auto& ev : t->events(sys)) {
        auto text = t->read_format(sys, ev);
        ASSERT_TRUE(text) << text.reason();
        texts.emplace_back(sys, *text);
      }
  }
  std::vector<std::string> expected;
  for (const auto& [sys, text] : texts) {
    auto raw = parse_raw_format(sys, text);
    ASSERT_TRUE(raw) << raw.reason();
    expected.push_back(describe(*raw));
  }
  ASSERT_EQ(texts.size(), expected.size());
  EXPECT_NE(expected[0].find("flags 549755813888 F39\n"), std::string::npos) << expected[0];
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      for (int n = 0; n < kRounds; ++n)
        for (std::size_t i = 0; i < texts.size(); ++i) {
          // Each thread walks the formats from its own place; the flags format every other parse.
          const std::size_t k = i % 2 ? 0 : (i + th * texts.size() / kThreads) % texts.size();
          auto raw = parse_raw_format(texts[k].first, texts[k].second);
          if (!raw || describe(*raw) != expected[k]) ++wrong[th];
        }
    });
  for (auto& th : threads) th.join();
  for (int th = 0; th < kThreads; ++th) EXPECT_EQ(wrong[th], 0) << "thread " << th;
}

}  // namespace
}  // namespace eventfs
