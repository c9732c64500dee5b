// One CPU's side of the stream hub, the one place its state is kept: its
// queues and their locks, which its drainer and the hub's readers share,
// and what the hub keeps for the CPU between sessions of open rings. Every
// part of the hub reaches the CPUs through this.
//
// Locks: `mu` guards `queue` (the drainer holds it for a whole drain batch
// when it gets it); `ring_mu` the CPU's ring and its counters, held by the
// drainer while it drains the ring and by the hub's stats (after `mu`, when
// it holds both). lock_all() takes every CPU's `mu`, in CPU order (the
// merged text stream and the session's ring changes hold them all).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ring/ring.h"
#include "stream/record_queue.h"

namespace eventfs {

struct HubCpu {
  // `staging_bytes` is cut to `queue_bytes`.
  HubCpu(std::size_t queue_bytes, std::size_t staging_bytes, std::size_t smallest_record)
      : queue(queue_bytes, smallest_record), staging(std::min(staging_bytes, queue_bytes), smallest_record) {}
  std::mutex mu;
  std::mutex ring_mu;
  RecordQueue queue;
  RecordQueue staging;  // the drainer's alone: records made while `queue` was busy
  // staging.memory_bytes() and staging.count(), as the drainer last saw
  // them (for the stats).
  std::atomic<std::size_t> staging_memory{0};
  std::atomic<std::uint64_t> staging_records{0};
  // Reads and polls of this CPU's stream or of the merged text stream that
  // wait for news, or are about to look whether they must
  // (StreamChannel::waiting()): while there are none, the CPU's readers are
  // not told (a reader that sleeps and reads on its own, as eventfs-record
  // does, would cost a notifier's wakeup at every drain), and the drainer
  // sweeps its ring less often (DrainPolicy::set_watched()).
  std::atomic<int> readers_waiting{0};
  // A read or poll of those streams was left waiting since the drainer last
  // looked (it clears it): a reader that waits again and again, answered at
  // each drain, is seen as waiting although it is not at the moment the
  // drainer looks, just after its answer.
  std::atomic<bool> reader_parked{false};
  int wake_fd = -1;     // eventfd: wakes the CPU's drainer out of poll()
  std::atomic<bool> repin{false};  // the notifier moves to the CPU at its next wakeups, until it is there
  RingStats closed;  // counts of the rings closed so far
  // The kernel's overrun counter up to which losses were reported (0 at
  // first: the instance is new at mount); what the kernel overwrote while
  // no stream was open is reported when the next one opens.
  std::uint64_t overrun_seen = 0;
};

using HubCpus = std::vector<std::unique_ptr<HubCpu>>;

inline std::vector<std::unique_lock<std::mutex>> lock_all(HubCpus& cpus) {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& c : cpus) locks.emplace_back(c->mu);
  return locks;
}

}  // namespace eventfs
