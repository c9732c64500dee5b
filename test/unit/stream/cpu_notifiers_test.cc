// CpuNotifiers: a CPU's request reaches that CPU's listeners and the
// all-CPU ones, on the CPU's own notifier thread, never the caller's;
// requests made before stop() are told before the threads end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "stream/cpu_notifiers.h"
#include "support/fake_hub_services.h"

namespace eventfs {
namespace {

using namespace std::chrono_literals;

TEST(CpuNotifiers, ARequestTellsItsCpusListenersAndTheAllCpuOnesOnItsThread) {
  std::vector<int> placed, woken;
  std::mutex mu;
  testing::FakeHubServices hub;
  hub.on_place = [&](int cpu) {
    std::lock_guard lock(mu);
    placed.push_back(cpu);
  };
  hub.on_woken = [&](int cpu) {
    std::lock_guard lock(mu);
    woken.push_back(cpu);
  };
  CpuNotifiers n(2, hub);
  std::atomic<int> cpu0{0}, cpu1{0}, all{0};
  std::atomic<bool> on_caller{false};
  const auto caller = std::this_thread::get_id();
  n.add([&] { ++cpu0; }, 0);
  n.add([&] { ++cpu1; }, 1);
  n.add(
      [&] {
        ++all;
        if (std::this_thread::get_id() == caller) on_caller = true;
      },
      -1);
  n.start(0);
  n.start(1);
  n.request(1);
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (all == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(all, 1);
  EXPECT_EQ(cpu1, 1);
  EXPECT_EQ(cpu0, 0) << "another CPU's listener was told";
  EXPECT_FALSE(on_caller) << "told on the requesting thread";

  n.notify(-1);  // (on the caller's thread: every listener)
  EXPECT_EQ(cpu0, 1);
  EXPECT_EQ(cpu1, 2);
  EXPECT_EQ(all, 2);
  n.request(0);
  n.stop();  // the last request is told first
  EXPECT_EQ(cpu0, 2);
  std::lock_guard lock(mu);
  EXPECT_EQ(placed.size(), 2u);
  EXPECT_GE(woken.size(), 2u);
}

}  // namespace
}  // namespace eventfs
