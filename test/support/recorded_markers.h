// The two marker recordings the recorder's tests make in each output
// format: numbered markers recorded whole, and a storm recorded while the
// recorder is stopped, so that eventfs's queue of the CPU drops records.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "support/markers.h"
#include "support/mounted_eventfs.h"

namespace eventfs_it::stream {

struct MarkerRecording {
  std::string failure;  // why the recording could not be made ("" if it was)
  int status = -1;      // the recorder's wait status
  std::string err;      // its standard error
  pid_t tid = 0;        // the writer's thread
  long long lost = 0;   // the loss eventfs's stats counted while it ran (storm only)
};

// eventfs-record of mark* on `m` (started) into `out`, with `format_args`
// (the output format); `markers` markers written from a thread pinned to
// `cpu`, 10 at a time 500 us apart; stopped with SIGTERM.
MarkerRecording record_markers(MountedEventfs& m, const std::vector<std::string>& format_args,
                               const std::string& out, int cpu, int markers);

// eventfs-record of marker on `m` into `out`, stopped (SIGSTOP) while
// `markers` markers are written as fast as possible on `cpu`, then let go and
// stopped with SIGINT once eventfs has read the kernel's ring; `lost`: what
// the mount's stats of the CPU counted as lost meanwhile (dropped by eventfs
// and lost in the kernel).
MarkerRecording record_marker_storm(MountedEventfs& m, const std::vector<std::string>& format_args,
                                    const std::string& out, int cpu, int markers);

}  // namespace eventfs_it::stream
