// Scheduling priority of a program's own threads (no eventfs type).
#pragma once

namespace eventfs {

// The nice value `steps` below this process's own (0 taken as its own when
// it cannot be read), at most as low as -20: where the daemon's drainers and
// eventfs-record's readers go by default, ahead of the workload they trace.
int nice_below_own(int steps);

}  // namespace eventfs
