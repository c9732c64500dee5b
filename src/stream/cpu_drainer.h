// One CPU's drainer: reads that CPU's ring while a session of open rings
// lasts, projects each record into its stable event(s) and queues it for
// the CPU's readers, when and as DrainPolicy (stream/drain_policy.h) says,
// and trims the queues every kTrimMs (their memory follows what waits in
// them: stream/record_queue.h). It runs on its own thread, pinned to the
// CPU (StreamHub::drain_loop parks it between sessions); telling the
// readers is left to the CPU's notifier.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

#include "projection/projection.h"
#include "projection/wanted_events.h"
#include "ring/ring.h"
#include "stream/drain_policy.h"
#include "stream/hub_cpu.h"
#include "stream/hub_services.h"

namespace eventfs {

class CpuDrainer {
 public:
  static constexpr std::size_t kDrainBatch = 4096;  // records taken from the ring in a turn
  static constexpr int kSettleDrains = 16;  // drains, at most, of what the ring holds at a session's end
  static constexpr int kPinRetryMs = 5000;          // the drainer tries to move to its CPU this long
  // The queues are trimmed (RecordQueue::trim()) this often while a session
  // lasts: a queue gives back the memory it no longer needs 1 to 2 periods
  // after it last held more (and up to kIdleWaitMs later while no record
  // comes).
  static constexpr int kTrimMs = 2000;

  // `max_entry`: the most queue bytes one raw record can make (so that
  // nothing staged is ever dropped). The drainer asks `hub` to tell the
  // CPU's readers (tell()), and reports a ring error there once per error
  // and session.
  CpuDrainer(int cpu, HubCpu& queues, const ProjectionTable& table, const WantedEvents* wanted,
             std::size_t max_entry, HubServices& hub);

  // Reads `ring` (the CPU's, for this session; used under ring_mu) until
  // `live` goes false, then moves what is staged into the queue. Returns
  // early when woken by the queues' wake_fd with `live` false.
  // `readiness_fd`: the instance's any-CPU readiness, or -1.
  void session(CpuRing& ring, int readiness_fd, const std::atomic<bool>& live);

 private:
  class Sink;
  using Clock = DrainPolicy::Clock;
  // One drain of the ring into the queue, or into staging while a reader
  // holds the queue.
  DrainPolicy::Drained drain(CpuRing& ring, Clock::time_point now);
  // Trims the queues when a period is over (the queue only if its lock is
  // free: otherwise at a later turn).
  void trim(Clock::time_point now);
  // Moves the staged records over to the queue (q_.mu held), as far as a
  // lease's bytes let it; how many it moved.
  std::size_t move_staged();

  const int cpu_;
  HubCpu& q_;
  const ProjectionTable& table_;
  const WantedEvents* wanted_;
  const std::size_t max_entry_;
  HubServices& hub_;
  // This session's:
  int ring_fd_ = -1;
  bool pinned_ = false;
  Clock::time_point pin_until_{};
  int reported_ = 0;  // the ring's error, once told
  Clock::time_point trim_at_{};
};

}  // namespace eventfs
