// The fixture of the fault tests (the top-level instance byte for byte as before),
// seeds, and what they print.
#pragma once

#include <sys/mman.h>
#include <time.h>
#include <iostream>
#include <new>
#include <random>
#include <string_view>

#include "support/refused_writes.h"
#include "support/stream_util.h"

namespace eventfs_it::fault {

using namespace stream;

// ---------------------------------------------------------------------------
// Small things.

// CLOCK_MONOTONIC in ns: one clock for the test, its threads and its children.
std::int64_t now_ns();

long ms_of(std::int64_t ns);

// "EIO (Input/output error)", "accepted" for 0, "short write" for -1.
std::string errno_desc(int e);


// Trigger lines of a trigger file (the kernel's "# ..." header is not one).
std::vector<std::string> trigger_lines(const std::string& text);

std::set<std::string> as_set(const std::vector<std::string>& v);

std::string owner_record(const std::string& name);

unsigned fault_seed();

// ---------------------------------------------------------------------------
// The top-level instance: every event's enable, filter and trigger, each
// system's enable and filter, and the global switches.

std::map<std::string, std::string> top_level_state();

std::string state_diff(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& after);

// Every test: the seed printed, and the top-level instance as it was.
class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EVENTFS_REQUIRE_LIVE_TRACEFS();
    seed_ = fault_seed();
    std::cout << "[fault] seed " << seed_ << " (EVENTFS_FAULT_SEED=" << seed_ << " repeats this run)" << std::endl;
    RecordProperty("seed", std::to_string(seed_));
    top_ = top_level_state();
  }
  void TearDown() override {
    if (top_.empty()) return;  // skipped
    auto now = top_level_state();
    EXPECT_TRUE(now == top_) << "the top-level instance changed:\n" << state_diff(top_, now);
  }
  // A count for the XML report (the log has it in a "[fault]" line).
  void Count(const std::string& what, long n) { RecordProperty(what, std::to_string(n)); }

  unsigned seed_ = 0;

 private:
  std::map<std::string, std::string> top_;
};

// ---------------------------------------------------------------------------
// The daemon's instance, event by event.

}  // namespace eventfs_it::fault
