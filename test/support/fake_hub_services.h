// A HubServices for tests of the hub's parts on their own: each call is
// counted or handed to a function the test sets.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "stream/hub_services.h"

namespace eventfs::testing {

struct FakeHubServices final : HubServices {
  std::function<void(int)> on_place, on_woken, on_tell;
  std::function<std::string()> cmdlines;
  std::mutex mu;
  std::vector<std::string> reports;
  int told_all = 0;

  void place_thread(int cpu) override {
    if (on_place) on_place(cpu);
  }
  void notifier_woken(int cpu) override {
    if (on_woken) on_woken(cpu);
  }
  void tell(int cpu) override {
    if (on_tell) on_tell(cpu);
  }
  void tell_all() override {
    std::lock_guard lock(mu);
    ++told_all;
  }
  void report(const std::string& line) override {
    std::lock_guard lock(mu);
    reports.push_back(line);
  }
  std::string saved_cmdlines() override { return cmdlines ? cmdlines() : std::string(); }
};

}  // namespace eventfs::testing
