// sched_switch traffic (ping-pong threads) and an independent libtraceevent reader of a second instance.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "eventfs/record.h"

#include "support/stream_reading.h"

namespace eventfs_it::stream {

struct PingPongResult {
  pid_t ping = 0, pong = 0;
  int rounds_done = 0;
  std::string parent_comm;  // the threads' name before they named themselves (their creator's)
};

// Two threads named `ping_name` and `pong_name` (prctl PR_SET_NAME) hand a
// byte back and forth `rounds` times over pipes. Pinned to one CPU (cpu >= 0)
// every hand-over is a direct switch from one to the other.
PingPongResult ping_pong(int rounds, int cpu = -1, const char* ping_name = "efs-ping",
                         const char* pong_name = "efs-pong");

// ---------------------------------------------------------------------------
// sched_switch records, as a comparable tuple.

struct Switch {
  pid_t prev_pid = 0;
  std::string prev_comm;
  char prev_state = 0;
  std::string next_comm;
  pid_t next_pid = 0;
  pid_t common_pid = -1;  // where known
  std::string task;       // the text stream's task column ("<...>" when unknown)
  int cpu = -1;           // the stream (or per-CPU file) it came from
};

// A Switch as a comparable tuple, the CPU first.
using SwitchKey = std::tuple<int, pid_t, std::string, char, pid_t, std::string>;
SwitchKey key_of(const Switch& s);
using SwitchCounts = std::map<SwitchKey, int>;

// The switches `got` (eventfs's instance) against `want` (another instance):
// "" when they are the same, else the differences, readable. With
// `state_may_race` (a kernel whose probes each read the task's state:
// kernel_reads_switch_state_per_probe()), a switch may differ in prev_state
// only, one side R and the other S or D; `state_races` counts those.
std::string compare_instances(const SwitchCounts& got, const SwitchCounts& want, bool state_may_race,
                              int* state_races = nullptr);

// "<pid> [<cpu>] <secs>.<usecs>: sched_switch: prev_comm=... next_pid=N" -> Switch.
bool parse_switch_line(const std::string& line, Switch& out);

// The fields of a stable sched_switch as its trace.dat print fmt prints them
// (eventfs-record -F trace.dat, eventfs-convert): "prev_comm=X prev_pid=N
// prev_state=S next_comm=Y next_pid=M" -> Switch (its fields only).
bool parse_switch_info(const std::string& info, Switch& out);

// The stable sched_switch payload (record.h's example struct).
bool parse_switch_payload(const std::string& p, Switch& out);

// ---------------------------------------------------------------------------
// A tracefs instance of the test's own, read with libtraceevent.

// /sys/kernel/tracing/instances/eventfs-it-ref-<pid>, removed at the end. An
// owner file in /tmp/eventfs-it-ref-<pid> (the convention of mounted_eventfs.h)
// keeps a concurrent run's StaleMountCleaner off it, and lets a later run
// remove it if this one crashes.
class RefInstance {
 public:
  // Makes the owner directory and the instance (error() says why not).
  RefInstance();
  // Removes the instance and the owner directory.
  ~RefInstance();
  RefInstance(const RefInstance&) = delete;
  RefInstance& operator=(const RefInstance&) = delete;

  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  // Disables every event, then rmdirs the instance (retried for 2 s).
  void Remove();
  std::string name_, owner_dir_, path_, error_;
};

// The letters of a task-state __print_flags() table, in table order, read
// from a tracefs format's print fmt: { 0x00000001, "S" }, ...
std::vector<std::pair<unsigned long long, char>> task_state_table(const std::string& format);

// The letter of the first table entry whose bit is set, 'R' if none.
char task_state_letter(const std::vector<std::pair<unsigned long long, char>>& table,
                       unsigned long long state);

struct ReferenceRead {
  std::vector<Switch> switches;
  long long missed = 0;  // sub-buffers that reported lost events
  std::size_t subbufs = 0;
  std::string error;
};

// Drains every CPU's trace_pipe_raw of `inst` (read(2), non-blocking, one
// sub-buffer per read) and decodes its sched_switch records with
// libtraceevent: kbuffer walks the sub-buffers, tep_parse_format reads the
// instance's events/sched/sched_switch/format.
ReferenceRead read_reference_switches(const std::string& inst, int cpus);

// ---------------------------------------------------------------------------
// trace_marker writes: ftrace:print records in an instance.

}  // namespace eventfs_it::stream
