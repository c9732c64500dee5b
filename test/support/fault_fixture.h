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
  // Skips without a live tracefs; prints and records the seed, and notes
  // top_level_state().
  void SetUp() override;
  // Expects top_level_state() as SetUp() found it (not after a skip).
  void TearDown() override;
  // A count for the XML report (the log has it in a "[fault]" line).
  void Count(const std::string& what, long n) { RecordProperty(what, std::to_string(n)); }

  unsigned seed_ = 0;

 private:
  std::map<std::string, std::string> top_;
};

// ---------------------------------------------------------------------------
// The daemon's instance, event by event.

}  // namespace eventfs_it::fault
