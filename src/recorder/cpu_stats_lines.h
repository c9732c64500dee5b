// What the recorder reads from the mount's per_cpu/cpuN/stats (eventfs(5)):
//  * "clock now:", the trace clock on that CPU, read once the streams are
//    open and the events held (the recording's start: older records, and
//    lost-events records older than it, were in the rings before it began)
//    and again as it ends, before the events are let go (its end: newer
//    records happened after it);
//  * "ring entries:" and "entries:", the records still unread in the
//    kernel's ring and in eventfs's queue of that CPU: at the end, a CPU's
//    stream is drained only once both are 0 (or a record newer than the end
//    came).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "error/result.h"

namespace eventfs::recorder {

// The value of the "clock now:" line of a stats text; EPROTO with a reason
// naming `what` when there is none or it is not a number.
Result<std::uint64_t> parse_clock_now(const std::string& stats, const std::string& what);

// Reads <mount>/per_cpu/cpu<cpu>/stats and parses its clock.
Result<std::uint64_t> read_clock_now(const std::string& mount, int cpu);

// The number of a "KEY: N" line (nullopt: no such line, or not a number).
std::optional<std::uint64_t> stats_number(const std::string& stats, const std::string& key);

// Whether nothing of CPU `cpu` waits unread, in the kernel's ring or in
// eventfs's queue: true when its stats say 0 for both (or cannot say: an
// eventfs without the lines, or an unreadable file), false otherwise.
bool nothing_unread(const std::string& mount, int cpu);

}  // namespace eventfs::recorder
