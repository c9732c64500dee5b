// per_cpu/cpuN/stats of the mount: the counts of a CPU's rings, those
// closed so far and the open one, and of its queue; and the trace clock's
// time now ("clock now:", in the unit of the streams' time stamps: ns for
// the clocks that count ns, else the clock's own count), taken from the
// kernel's "now ts:" of the instance's per_cpu/cpuN/stats (which gives
// SECS.USECS for ns clocks: microsecond precision, rounded down), so that a
// reader can tell the records from before a moment from those after it.
#pragma once

#include <cstddef>
#include <string>

#include "ring/ring.h"
#include "stream/hub_cpu.h"
#include "tracefs/ring_files.h"

namespace eventfs {

class RingSession;

// Adds the counts of `s` to `acc` (a CPU's counts outlive its rings).
void accumulate(RingStats& acc, const RingStats& s);

// The stats text of CPU `cpu`: takes its mu, then its ring_mu; reads the
// kernel's stats of the CPU through `files` first (without the "clock now:"
// line when they cannot be read).
std::string cpu_stats_text(HubCpu& c, const RingSession& session, const RingFiles& files, std::size_t cpu);

}  // namespace eventfs
