// How a recording declares the trace clock of eventfs's tracefs instance in
// CTF: a clock's frequency is what turns its counts into time, and a CTF
// reader trusts it. Only clocks whose frequency is known are declared.
#pragma once

#include <cstdint>
#include <string>

#include "error/result.h"

namespace eventfs::recorder {

struct ClockDeclaration {
  std::uint64_t freq = 1000000000;  // counts a second
  std::string unit;                 // what a count is, for the metadata's comment
};

// The declaration of tracefs clock `name` (as MOUNT/trace_clock selects it):
// the nanosecond clocks (local, global, perf, mono, mono_raw, boot, tai) at
// 1 GHz; uptime (jiffies, which the kernel gives in USER_HZ) at
// `user_hz` (sysconf(_SC_CLK_TCK)). EINVAL with one line naming `mount`
// for counter (it counts events, not time), for x86-tsc and ppc-tb (their
// frequency is the machine's, which nothing here can read exactly), and for
// a clock this program does not know.
Result<ClockDeclaration> declare_clock(const std::string& name, long user_hz, const std::string& mount);

// Where the trace clock's zero lies after the Unix epoch, as CTF's clock
// block says it (offset_s seconds, then offset counts): what makes a reader
// print the date and time of day an event happened.
struct ClockOffset {
  std::int64_t seconds = 0;   // may be negative (tai runs ahead of the real time)
  std::uint64_t counts = 0;   // below a second, in the clock's counts
};

// The offset of a clock of `freq` counts a second that read `clock_now`
// when the real time (CLOCK_REALTIME) was `realtime_ns`.
ClockOffset clock_offset(std::uint64_t clock_now, std::int64_t realtime_ns, std::uint64_t freq);

}  // namespace eventfs::recorder
