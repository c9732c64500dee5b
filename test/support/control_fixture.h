// The fixture of the control tests (the top-level instance is left as it was) and
// their helpers: owner records, writes, trigger texts, the task-switch catalog,
// kernel trigger translation, context switches on demand.
#pragma once

#include <fnmatch.h>
#include <functional>
#include <random>
#include <string_view>

#include "support/refused_writes.h"
#include "support/mounted_eventfs.h"
#include "support/stream_util.h"

namespace eventfs_it::control {

using RefusedWrite = ::eventfs::testing::RefusedWrite;

constexpr const char* kTopSchedSwitch = "/sys/kernel/tracing/events/sched/sched_switch";
constexpr const char* kHeaderStart = "# Available triggers:\n";

// A second stable event over sched:sched_switch with renamed fields, as in
// the unit tests (controller_test.cc).
constexpr const char* kTaskSwitchCatalog =
    "\nSTABLE_EVENT(task_switch, sched:sched_switch, id=900,\n"
    "\t__field(pid_t, from) = prev_pid\n"
    "\t__field(pid_t, to) = next_pid\n"
    "\t__field(char, state) = task_state(prev_state)\n"
    ")\n";

using stream::instance_dir;  // instances/<name> of the live tracefs
std::string owner_record(const std::string& name);

// Waits (bounded) for the ownership record of `name` to name `pid`; returns its text.
std::string wait_owner(const std::string& name, pid_t pid, std::chrono::milliseconds limit = 2s);

// One open and one write(2) of exactly `data`, the way `echo data > path`
// does it (`flags` O_APPEND for >>). 0, the errno, or -1 for a short write.
using stream::write_once;


// A write through the mount that must be accepted.
::testing::AssertionResult Accepts(const MountedEventfs& m, const std::string& rel, std::string_view data);

// Trigger lines of a trigger file (the kernel's "# ..." header is not one).
std::vector<std::string> trigger_lines(const std::string& text);

std::set<std::string> as_set(const std::vector<std::string>& v);

// Events of a live tracefs system whose names match a glob, sorted.
std::vector<std::string> events_matching(const std::string& system, const std::string& glob);

// The default catalog plus task_switch, in a file of `dir`.
std::string write_task_switch_catalog(const TempDir& dir);

// Stable event -> "system/event" of its raw event on this kernel.
std::map<std::string, std::string> live_sources();

// What a stable trigger file must show for the kernel's `text` (default
// catalog: filter fields keep their names; enable_event/disable_event targets
// that are stable events get their stable names).
std::string translate_kernel_triggers(const std::string& text, const std::map<std::string, std::string>& sources);

// Two threads handing a byte back and forth over pipes: each hand-over is a
// context switch on a machine with few CPUs.
void ping_pong(int rounds);

// Makes context switches until `done()` or the deadline.
bool switch_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5s);

// ---------------------------------------------------------------------------
// Every test checks that the top-level instance's sched_switch control files
// (and the other files eventfs writes in its instance) are as they were.

class ControlTest : public ::testing::Test {
 protected:
  // Skips without a live tracefs; notes the top-level files TopLevel() reads.
  void SetUp() override;
  // Expects them as SetUp() found them (not after a skip).
  void TearDown() override;
  // The top-level sched_switch trigger, filter and enable, and the enable of
  // the other events eventfs writes in its instance, by file.
  static std::map<std::string, std::string> TopLevel();

 private:
  std::map<std::string, std::string> top_;
};

// ---------------------------------------------------------------------------
// 1. The instance's life.

}  // namespace eventfs_it::control
