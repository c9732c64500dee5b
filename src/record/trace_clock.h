// How a recording declares the trace clock of eventfs's tracefs instance in
// CTF: a clock's frequency is what turns its counts into time, and a CTF
// reader trusts it. Only clocks whose frequency is known are declared.
#pragma once

#include <cstdint>
#include <string>

#include "error/result.h"

namespace eventfs::record {

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

}  // namespace eventfs::record
