#include "stream/hub_channels.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "projection/projection.h"

namespace eventfs {

bool queues_readable(HubCpus& cpus, int cpu) {
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    if (cpu >= 0 && i != static_cast<std::size_t>(cpu)) continue;
    HubCpu& c = *cpus[i];
    std::lock_guard lock(c.mu);
    if (c.queue.has_dropped() || !c.queue.empty()) return true;
  }
  return false;
}

namespace {
void lost_record(int cpu, std::uint64_t ts, std::uint64_t count, bool unknown, std::string& out) {
  std::uint8_t buf[64];
  std::uint32_t n = write_lost_record(ts, count, static_cast<std::uint32_t>(cpu), unknown, buf);
  out.append(reinterpret_cast<const char*>(buf), n);
}
}  // namespace

bool take_records(RecordQueue& q, int cpu, std::size_t max, std::string& out) {
  std::size_t start = out.size();
  std::uint64_t ts;
  if (RecordQueue::Dropped d = q.take_gap(ts); d.any()) lost_record(cpu, ts, d.count, d.unknown, out);
  std::size_t used = out.size() - start;
  if (used < max || used == 0) q.take_into(out, max - std::min(used, max), used == 0);
  return out.size() > start;
}

bool lease_records(RecordQueue& q, std::size_t max, StreamChannel::Lease& out) {
  if (q.empty() || q.has_dropped()) return false;  // a lost-events record to make first: take()
  RecordQueue::Runs runs = q.lease(max);
  if (runs.n == 0) return false;
  out.n = runs.n;
  for (int i = 0; i < runs.n; ++i) out.parts[i] = {reinterpret_cast<const char*>(runs.at[i]), runs.bytes[i]};
  return true;
}

bool CpuChannel::take(std::size_t max, std::string& out) {
  HubCpu& c = queues();
  std::lock_guard lock(c.mu);
  return take_records(c.queue, cpu_, max, out);
}

bool CpuChannel::lease(std::size_t max, Lease& out) {
  HubCpu& c = queues();
  std::lock_guard lock(c.mu);
  return lease_records(c.queue, max, out);
}

void CpuChannel::release(const Lease&) {
  HubCpu& c = queues();
  std::lock_guard lock(c.mu);
  c.queue.unpin();
}

}  // namespace eventfs
