#include "stream/cpu_stats.h"

#include <mutex>

#include <fmt/format.h>

#include "stream/ring_session.h"

namespace eventfs {

void accumulate(RingStats& acc, const RingStats& s) {
  acc.entries += s.entries;
  acc.lost += s.lost;
  acc.lost_reports += s.lost_reports;
  acc.unknown_lost += s.unknown_lost;
  acc.overrun += s.overrun;
  acc.subbufs += s.subbufs;
  acc.swaps += s.swaps;
}

std::string cpu_stats_text(HubCpu& c, const RingSession& session, std::size_t cpu) {
  std::lock_guard lock(c.mu);
  RingStats s = c.closed;
  const char* mode = "closed";
  if (const CpuRing* ring = session.ring_of(cpu)) {  // (the rings change under every CPU's mu)
    std::lock_guard ring_lock(c.ring_mu);
    accumulate(s, ring->stats());
    mode = ring->mode();
  }
  const RecordQueue& q = c.queue;
  return fmt::format(
      "entries: {}\n"
      "read events: {}\n"
      "lost events: {}\n"
      "lost reports: {}\n"
      "lost reports without count: {}\n"
      "overrun: {}\n"
      "dropped by eventfs: {}\n"
      "sub-buffers: {}\n"
      "reader swaps: {}\n"
      "reader: {}\n",
      q.count(), s.entries, s.lost, s.lost_reports, s.unknown_lost, s.overrun, q.dropped_total(), s.subbufs,
      s.swaps, mode);
}

}  // namespace eventfs
