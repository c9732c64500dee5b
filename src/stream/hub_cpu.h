// One CPU's side of the stream hub: its queues and their locks, which its
// drainer shares (CpuQueues), and what the hub keeps for the CPU between
// sessions of open rings. Every part of the hub reaches the CPUs through
// this; lock_all() takes every CPU's `mu`, in CPU order (the merged text
// stream and the session's ring changes hold them all).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ring/ring.h"
#include "stream/cpu_drainer.h"

namespace eventfs {

struct HubCpu : CpuQueues {
  HubCpu(std::size_t queue_bytes, std::size_t staging_bytes, std::size_t smallest_record)
      : CpuQueues(queue_bytes, std::min(staging_bytes, queue_bytes), smallest_record) {}
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
