#include "recorder/trace_clock.h"

#include <cerrno>

#include <fmt/format.h>

namespace eventfs::recorder {
namespace {

// The kernel's clocks that count nanoseconds (kernel/trace/trace.c,
// trace_clocks[], in_ns = 1).
constexpr const char* kNanosecondClocks[] = {"local", "global", "perf", "mono", "mono_raw", "boot", "tai"};

std::string choose_another(const std::string& mount) {
  return fmt::format("select a clock that counts nanoseconds (local, global, mono, boot) in {}/trace_clock", mount);
}

}  // namespace

Result<ClockDeclaration> declare_clock(const std::string& name, long user_hz, const std::string& mount) {
  for (const char* c : kNanosecondClocks)
    if (name == c) return ClockDeclaration{1000000000, "nanoseconds"};
  if (name == "uptime") {
    if (user_hz <= 0)
      return fail(EINVAL, fmt::format("the trace clock 'uptime' of {} counts USER_HZ ticks, and USER_HZ is unknown: {}",
                                      mount, choose_another(mount)));
    return ClockDeclaration{static_cast<std::uint64_t>(user_hz), "jiffies (USER_HZ ticks)"};
  }
  if (name == "counter")
    return fail(EINVAL, fmt::format("the trace clock 'counter' of {} counts events, not time, and a CTF clock needs "
                                    "a frequency: {}",
                                    mount, choose_another(mount)));
  if (name == "x86-tsc" || name == "ppc-tb")
    return fail(EINVAL, fmt::format("the trace clock '{}' of {} counts CPU cycles at a frequency eventfs-record cannot "
                                    "read exactly, and a CTF clock needs it: {}",
                                    name, mount, choose_another(mount)));
  return fail(EINVAL, fmt::format("the trace clock '{}' of {} is not one eventfs-record knows the frequency of: {}",
                                  name, mount, choose_another(mount)));
}

ClockOffset clock_offset(std::uint64_t clock_now, std::int64_t realtime_ns, std::uint64_t freq) {
  constexpr __int128 kNs = 1000000000;
  if (freq == 0) return {};
  // The clock's reading in ns, then the real time of its zero; floored, so
  // that the counts below the second are never negative.
  const __int128 now_ns = static_cast<__int128>(clock_now) * kNs / freq;
  const __int128 zero_ns = static_cast<__int128>(realtime_ns) - now_ns;
  __int128 seconds = zero_ns / kNs, rest = zero_ns % kNs;
  if (rest < 0) {
    seconds -= 1;
    rest += kNs;
  }
  ClockOffset o;
  o.seconds = static_cast<std::int64_t>(seconds);
  o.counts = static_cast<std::uint64_t>(rest * freq / kNs);
  return o;
}

}  // namespace eventfs::recorder
