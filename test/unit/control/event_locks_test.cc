// EventLockTable: which writes and reads wait for which.
#include "control/event_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "support/time_scale.h"

namespace eventfs {
namespace {

using namespace std::chrono_literals;

// How long a thread that should not be waiting is given to finish.
std::chrono::milliseconds kFinishes() { return eventfs_it::scaled(5000ms); }
// How long a thread that should be waiting is watched not to finish.
constexpr auto kStaysWaiting = 100ms;

std::vector<std::string> many_events(std::size_t n) {
  std::vector<std::string> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back("events/sys/ev" + std::to_string(i));
  return v;
}

TEST(EventLockTable, AWriteWaitsForAWriteToOneOfItsEventsNotForOthers) {
  EventLockTable t;
  std::future<void> same, other;
  {
    auto held = t.for_write({"events/b/y", "events/a/x", "events/a/x"});
    EXPECT_EQ(t.in_use(), 2u) << "repeats are one event";
    same = std::async(std::launch::async, [&] { auto h = t.for_write({"events/b/y", "events/c/z"}); });
    other = std::async(std::launch::async, [&] { auto h = t.for_write({"events/c/w"}); });
    EXPECT_EQ(other.wait_for(kFinishes()), std::future_status::ready) << "a write to another event waited";
    EXPECT_EQ(same.wait_for(kStaysWaiting), std::future_status::timeout) << "a write to a held event went on";
  }
  EXPECT_EQ(same.wait_for(kFinishes()), std::future_status::ready) << "the write was not let go on";
  EXPECT_EQ(t.in_use(), 0u) << "the mutexes of events nobody holds are kept";
}

TEST(EventLockTable, AReadWaitsForAWriteToItsEventOnly) {
  EventLockTable t;
  std::future<void> own, other;
  {
    auto held = t.for_write({"events/a/x"});
    own = std::async(std::launch::async, [&] { auto h = t.for_read("events/a/x"); });
    other = std::async(std::launch::async, [&] { auto h = t.for_read("events/b/y"); });
    EXPECT_EQ(other.wait_for(kFinishes()), std::future_status::ready);
    EXPECT_EQ(own.wait_for(kStaysWaiting), std::future_status::timeout) << "a read went on during its event's write";
    EXPECT_EQ(t.in_use(), 1u) << "the event's mutex, held and waited for";
  }
  EXPECT_EQ(own.wait_for(kFinishes()), std::future_status::ready);
  EXPECT_EQ(t.in_use(), 0u);
}

TEST(EventLockTable, AWriteOfManyEventsHoldsUpEveryWriteButNoRead) {
  EventLockTable t;
  std::future<void> write, read;
  {
    auto wide = t.for_write(many_events(EventLockTable::kMaxEventLocks + 1));
    EXPECT_EQ(t.in_use(), 0u) << "a wide write takes the whole table, not each event's mutex";
    read = std::async(std::launch::async, [&] { auto h = t.for_read("events/sys/ev0"); });
    write = std::async(std::launch::async, [&] { auto h = t.for_write({"events/other/ev"}); });
    EXPECT_EQ(read.wait_for(kFinishes()), std::future_status::ready) << "a read waited for a wide write";
    EXPECT_EQ(write.wait_for(kStaysWaiting), std::future_status::timeout) << "a write went on during a wide one";
  }
  EXPECT_EQ(write.wait_for(kFinishes()), std::future_status::ready);
}

TEST(EventLockTable, AWriteOfAsManyEventsAsTheLimitLocksEachOfThem) {
  EventLockTable t;
  auto held = t.for_write(many_events(EventLockTable::kMaxEventLocks));
  EXPECT_EQ(t.in_use(), EventLockTable::kMaxEventLocks);
  auto other = std::async(std::launch::async, [&] { auto h = t.for_write({"events/other/ev"}); });
  EXPECT_EQ(other.wait_for(kFinishes()), std::future_status::ready);
}

TEST(EventLockTable, HeldLocksMoveWithTheirHolder) {
  EventLockTable t;
  std::future<void> waiting;
  {
    auto first = t.for_write({"events/a/x"});
    {
      auto moved = std::move(first);
      EXPECT_EQ(t.in_use(), 1u);
    }
    EXPECT_EQ(t.in_use(), 0u) << "the moved-to holder let go; the moved-from has nothing";
    waiting = std::async(std::launch::async, [&] { auto h = t.for_write({"events/a/x"}); });
    EXPECT_EQ(waiting.wait_for(kFinishes()), std::future_status::ready);
  }
}

}  // namespace
}  // namespace eventfs
