// trace_marker writes and the marker catalog.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "eventfs/record.h"

#include "support/sched_switch.h"

namespace eventfs_it::stream {

std::string marker_text(int i);

// "m-000123" -> 123; -1 otherwise.
int marker_number(const std::string& s);

struct MarkerWriteResult {
  pid_t tid = 0;
  int written = 0;
  std::string error;
};

// Writes markers m-<first>..m-<first+n-1> (one write(2) each, no newline) to
// `trace_marker` from a thread pinned to `cpu`; a pause of `pause` after
// every `burst` writes (0: as fast as possible).
MarkerWriteResult write_markers(const std::string& trace_marker, int cpu, int n, int burst = 0,
                                std::chrono::microseconds pause = 0us);

// The default catalog plus `marker` over ftrace:print, written into `dir`.
inline constexpr const char* kMarkerEvent =
    "\n# A test event over trace_marker writes.\n"
    "STABLE_EVENT(marker, ftrace:print, id=1000,\n"
    "\t__array(char, text, 64) = buf\n"
    ")\n";

std::string write_marker_catalog(const TempDir& dir);

// eventfs over the default catalog plus `marker`, with `extra` options (a
// catalog that cannot be written makes the daemon, and so Start(), fail).
std::vector<std::string> marker_mount_args(const TempDir& dir, const std::vector<std::string>& extra);

struct MarkerMount {
  // The mount over marker_mount_args(dir, extra); not started.
  explicit MarkerMount(const std::vector<std::string>& extra = {});
  TempDir dir;  // the catalog, for as long as the mount
  MountedEventfs m;
};

}  // namespace eventfs_it::stream
