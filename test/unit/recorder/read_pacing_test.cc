// How long a reader thread lets records gather: sized from the rate they
// came at, for ReadPacing::kTarget bytes a read, never above kMaxWait.
#include <gtest/gtest.h>

#include <chrono>

#include "recorder/read_pacing.h"

namespace eventfs::recorder {
namespace {

using std::chrono::milliseconds;
using Clock = ReadPacing::Clock;

TEST(RecordReadPacing, TheLongestWaitUntilARateIsKnown) {
  ReadPacing p;
  EXPECT_EQ(p.wait(), ReadPacing::kMaxWait);
  const Clock::time_point t0{};
  p.caught_up(t0 + milliseconds(10), 4 << 20);  // the first catch-up: no interval yet
  EXPECT_EQ(p.wait(), ReadPacing::kMaxWait);
}

TEST(RecordReadPacing, AWaitForTheTargetAtTheLastRate) {
  ReadPacing p;
  const Clock::time_point t0{};
  p.caught_up(t0, 0);
  // kTarget / 4 in 10 ms: kTarget takes 40 ms.
  p.caught_up(t0 + milliseconds(10), ReadPacing::kTarget / 4);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(p.wait()), milliseconds(40));
  // Twice kTarget in 10 ms: 5 ms.
  p.caught_up(t0 + milliseconds(20), 2 * ReadPacing::kTarget);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(p.wait()), milliseconds(5));
}

TEST(RecordReadPacing, ASlowOrSilentStreamWaitsNoMoreThanTheMost) {
  ReadPacing p;
  const Clock::time_point t0{};
  p.caught_up(t0, 0);
  p.caught_up(t0 + milliseconds(100), 1000);  // a trickle
  EXPECT_EQ(p.wait(), ReadPacing::kMaxWait);
  p.caught_up(t0 + milliseconds(200), 0);  // nothing came
  EXPECT_EQ(p.wait(), ReadPacing::kMaxWait);
  p.caught_up(t0 + milliseconds(200), 1 << 20);  // no time passed: no rate
  EXPECT_EQ(p.wait(), ReadPacing::kMaxWait);
}

}  // namespace
}  // namespace eventfs::recorder
