// Where a recording starts in the trace clock: the "clock now:" line of the
// mount's per_cpu/cpuN/stats (eventfs(5)), read once the streams are open
// and the events held. Records older than it, and lost-events records older
// than it, were in the rings before the recording began: they are not
// written.
#pragma once

#include <cstdint>
#include <string>

#include "error/result.h"

namespace eventfs::recorder {

// The value of the "clock now:" line of a stats text; EPROTO with a reason
// naming `what` when there is none or it is not a number.
Result<std::uint64_t> parse_clock_now(const std::string& stats, const std::string& what);

// Reads <mount>/per_cpu/cpu<cpu>/stats and parses it.
Result<std::uint64_t> read_clock_now(const std::string& mount, int cpu);

}  // namespace eventfs::recorder
