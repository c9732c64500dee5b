// The daemon's own threads as a capture knows them: a thread started after
// the last list is found by the first record naming it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "control/own_threads.h"

namespace eventfs {
namespace {

bool listed(const OwnThreads& own, int tid) {
  return std::binary_search(own.tids().begin(), own.tids().end(), tid);
}

TEST(OwnThreads, AThreadStartedAfterTheListIsFoundByItsId) {
  OwnThreads own;
  EXPECT_TRUE(listed(own, ::gettid()));
  EXPECT_FALSE(own.take_changed());
  std::promise<int> started;
  std::promise<void> done;
  std::thread t([&] {
    started.set_value(::gettid());
    done.get_future().wait();
  });
  const int tid = started.get_future().get();
  EXPECT_FALSE(listed(own, tid));
  EXPECT_TRUE(own.is_own(tid));
  EXPECT_TRUE(listed(own, tid));
  EXPECT_TRUE(own.take_changed());
  EXPECT_FALSE(own.take_changed()) << "told once";
  EXPECT_TRUE(own.is_own(tid));
  EXPECT_FALSE(own.take_changed());
  done.set_value();
  t.join();
  own.list();
  EXPECT_FALSE(listed(own, tid)) << "gone with the thread";
  EXPECT_TRUE(own.take_changed());
}

TEST(OwnThreads, OtherProcessesAndImpossibleIdsAreNotOwn) {
  OwnThreads own;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_FALSE(own.is_own(child));
  EXPECT_FALSE(own.is_own(child)) << "remembered";
  EXPECT_FALSE(own.is_own(1));
  EXPECT_FALSE(own.is_own(0)) << "the idle task";
  EXPECT_FALSE(own.is_own(-1));
  EXPECT_FALSE(own.is_own(std::int64_t{1} << 40));
  EXPECT_FALSE(own.take_changed());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(OwnThreads, RelistWaitsItsInterval) {
  OwnThreads own;
  std::promise<int> started;
  std::promise<void> done;
  std::thread t([&] {
    started.set_value(::gettid());
    done.get_future().wait();
  });
  const int tid = started.get_future().get();
  const auto now = std::chrono::steady_clock::now();
  own.relist(now - OwnThreads::kRelist);  // the constructor listed just now
  EXPECT_FALSE(listed(own, tid));
  own.relist(now + OwnThreads::kRelist);
  EXPECT_TRUE(listed(own, tid));
  EXPECT_TRUE(own.take_changed());
  done.set_value();
  t.join();
}

}  // namespace
}  // namespace eventfs
