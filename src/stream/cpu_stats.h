// per_cpu/cpuN/stats of the mount: the counts of a CPU's rings, those
// closed so far and the open one, and of its queue.
#pragma once

#include <cstddef>
#include <string>

#include "ring/ring.h"
#include "stream/hub_cpu.h"

namespace eventfs {

class RingSession;

// Adds the counts of `s` to `acc` (a CPU's counts outlive its rings).
void accumulate(RingStats& acc, const RingStats& s);

// The stats text of CPU `cpu`: takes its mu, then its ring_mu.
std::string cpu_stats_text(HubCpu& c, const RingSession& session, std::size_t cpu);

}  // namespace eventfs
