// Read-back in the writer's own words, on its own: a stable event reads back
// what it wrote as written, and what another stable event of the same raw
// event (or the kernel) wrote renamed into its names.
#include <gtest/gtest.h>

#include <stdexcept>

#include "control/stable_names.h"
#include "control/written_words.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;

// A second stable event over sched_switch, its fields renamed.
Catalog catalog_with_cpu_switch() {
  return testing::builtin_catalog_with("STABLE_EVENT(cpu_switch, sched:sched_switch, id=901,\n"
                                       " __field(pid_t, leaving) = prev_pid\n __field(pid_t, coming) = next_pid)",
                                       "cpu_switch.catalog");
}

class WrittenWordsTest : public ::testing::Test {
 protected:
  WrittenWordsTest() : fx("linux-6.18", catalog_with_cpu_switch()) {
    for (const auto& b : fx.resolution.available) {
      stable.push_back(stable_names_of(b));
      stable.back().index = stable.size() - 1;
    }
  }
  const StableNames& event(const std::string& name) const {
    for (const auto& s : stable)
      if (s.name == name) return s;
    throw std::runtime_error("no event " + name);
  }

  ResolvedFixture fx;
  std::vector<StableNames> stable;
  WrittenWords words{stable};
};

TEST_F(WrittenWordsTest, AFilterReadsBackAsItsWriterWroteIt) {
  const StableNames& mine = event("cpu_switch");
  const StableNames& other = event("sched_switch");
  ASSERT_EQ(mine.dir, other.dir);
  const std::string raw = "prev_pid == 1 && next_pid != 2";
  // Nobody's words: renamed field by field.
  EXPECT_EQ(words.filter(mine, raw), "leaving == 1 && coming != 2");
  words.filter_written(mine.dir, raw, "leaving==1&&coming!=2", mine.index);
  EXPECT_EQ(words.filter(mine, raw), "leaving==1&&coming!=2");
  EXPECT_EQ(words.filter(other, raw), raw);  // the same raw event, its own names
  EXPECT_EQ(words.filter(mine, "prev_pid == 3"), "leaving == 3");  // changed behind eventfs's back
  words.condition_rewritten(mine.dir, "", raw, "prev_pid == 7");
  EXPECT_EQ(words.filter(mine, "prev_pid == 7"), "leaving==1&&coming!=2");
  words.filter_cleared(mine.dir);
  EXPECT_EQ(words.filter(mine, "prev_pid == 7"), "leaving == 7");
}

TEST_F(WrittenWordsTest, ATriggerReadsBackWithStableTargetAndNames) {
  const StableNames& mine = event("cpu_switch");
  const StableNames& other = event("sched_switch");
  const std::string line = "enable_event:sched:sched_wakeup:count=2 if prev_pid == 1";
  // Nobody's words: the target's stable name, the fields renamed.
  EXPECT_EQ(words.trigger_line(mine, line), "enable_event:sched_wakeup:count=2 if leaving == 1");
  words.triggers_written(mine.dir,
                         {{false, "enable_event:sched:sched_wakeup", "prev_pid == 1", "sched_wakeup",
                           "leaving==1", {}}},
                         mine.index);
  EXPECT_EQ(words.trigger_line(mine, line), "enable_event:sched_wakeup:count=2 if leaving==1");
  EXPECT_EQ(words.trigger_line(other, line), "enable_event:sched_wakeup:count=2 if prev_pid == 1");
  words.condition_rewritten(mine.dir, "enable_event:sched:sched_wakeup", "prev_pid == 1", "prev_pid == 4");
  EXPECT_EQ(words.trigger_line(mine, "enable_event:sched:sched_wakeup:unlimited if prev_pid == 4"),
            "enable_event:sched_wakeup:unlimited if leaving==1");
  words.triggers_written(mine.dir, {{true, "enable_event:sched:sched_wakeup", "", "", "", {}}}, mine.index);
  EXPECT_EQ(words.trigger_line(mine, "enable_event:sched:sched_wakeup:unlimited if prev_pid == 4"),
            "enable_event:sched_wakeup:unlimited if leaving == 4");
  EXPECT_EQ(words.trigger_line(mine, "traceon:unlimited if next_pid == 2"), "traceon:unlimited if coming == 2");
}

}  // namespace
}  // namespace eventfs
