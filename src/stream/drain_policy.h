// When a CPU's drainer reads its ring, how long it sleeps in between, on
// which descriptors, and when it tells the readers: the decisions of
// CpuDrainer (stream/cpu_drainer.h), apart from the system calls that carry
// them out. Nothing here blocks, reads a clock or touches a descriptor: the
// caller passes the time in and reports what poll() and the drain gave.
//
// One turn of a drainer:
//   DrainPolicy::Wait w = policy.wait(now, staged);   // poll() on what it says
//   (woken by the hub's eventfd: no turn; start over)
//   if (policy.woke(now, result)) { drain; policy.drained(what_it_gave); }
//   if (policy.end_turn()) tell the readers;
//
// The rules:
//  * A new session reads the ring at once; so does a turn after one that
//    took a full batch (the ring is behind).
//  * The ring is read when the kernel says it is ready (it wakes a poller
//    once the ring is buffer_percent full, half by default), but not within
//    kRestMs of catching up with the writer: the ring's descriptor is not
//    polled meanwhile. Not reading at the writer's heels lets the kernel
//    fill whole sub-buffers, which read(2) takes by swapping a page (a
//    partly read sub-buffer is copied event by event, and mmap's GET_READER
//    consumes event by event); and the kernel's readiness can stay up after
//    a catch-up, so polling such a ring at once again would spin.
//  * And at each sweep: kPollMs apart while records come, so a trickle
//    comes in batches at most that late; doubling up to kIdlePollMs while
//    sweeps find nothing, so that an idle open stream costs few wakeups, but
//    not so far that a storm starting on an idle stream overruns the ring
//    before the first sweep (the kernel's buffer_percent wakeup alone can
//    come too late). A sweep reads nothing while the ring's readiness came
//    within two intervals: it would find only the writer's part-filled
//    sub-buffer, copied event by event.
//  * While no reader waits for news (no blocked read or poll of the CPU's
//    stream or of trace_pipe: set_watched()), sweeps are kUnwatchedPollMs
//    apart at the least: a reader that reads on its own time, as
//    eventfs-record does, needs no record sooner, and every sweep is a
//    wakeup on the CPU being traced. A ring filling faster is drained at
//    the kernel's buffer_percent wakeup, as before.
//  * Once enough sweeps in a row found nothing (two, and the ring has
//    nothing delivered late: CpuRing::settled), there are no more sweeps:
//    the drainer waits for the kernel to say a record was written on any CPU
//    (the instance's trace_pipe: ring/any_cpu_readiness.h), at most
//    kIdleWaitMs (the kernel's own wakeup can miss a lone record, a race its
//    code admits to), so an idle open stream costs a wakeup a second and
//    the first record after a pause comes at once. That readiness is up
//    while another CPU's records are unread: a turn it wakes that finds
//    nothing here counts as a sweep, and each such turn in a row doubles the
//    empty sweeps needed before it is waited for again (up to 65, 650 ms),
//    so that a reader of an idle CPU beside a busy one wakes about as often
//    as the sweeps do, never spins. A CPU with no ring yet waits
//    kIdleWaitMs, never for that readiness (it has no record to be told of,
//    and the readiness stays up while another CPU's records are unread): its
//    ring is looked for once a second (PendingCpuRing).
//  * Records staged while a reader held the queue are retried within
//    kStagedRetryMs.
//  * Readers are told once the ring is caught up, or every kNotifyRecords
//    in a storm: fewer, larger answers, and the drainer gets back to the
//    ring sooner.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace eventfs {

class DrainPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kPollMs = 5;          // every ring is looked at this often,
  static constexpr int kUnwatchedPollMs = 20;  // or this, while no reader waits,
  static constexpr int kIdlePollMs = 10;     // or up to this when nothing comes,
  static constexpr int kIdleWaitMs = 1000;   // or this, waiting for the readiness
  static constexpr int kRestMs = 1;          // a caught-up ring is left alone this long
  static constexpr int kStagedRetryMs = 1;   // staged records are moved this soon
  static constexpr std::size_t kNotifyRecords = 16384;  // in a storm, tell readers this often

  // What to poll, and for how long (milliseconds; 0: not at all).
  struct Wait {
    bool ring = false;       // the ring's own descriptor
    bool readiness = false;  // the instance's any-CPU readiness
    int timeout_ms = 0;
  };
  // What poll() said (when it was not woken by the hub).
  struct Polled {
    bool timed_out = false;  // poll() returned 0
    bool ring_ready = false;  // the ring's descriptor: POLLIN, POLLERR or POLLHUP
    bool written = false;     // the readiness descriptor, polled and with any revents
  };
  // What a drain gave.
  struct Drained {
    std::size_t got = 0;       // CpuRing::drain(): records delivered
    bool failed = false;       // CpuRing::drain() failed
    std::size_t batch = 0;     // the most it was asked for
    std::size_t added = 0;     // records (and lost-events records) queued or staged
    bool has_ring = true;      // CpuRing::has_ring(), after the drain
    bool settled = true;       // CpuRing::settled(), after the drain
    bool staging_empty = true;  // nothing staged, after the drain
  };

  // A new session at `now`; `has_readiness`: there is an any-CPU readiness
  // descriptor to wait on once idle.
  DrainPolicy(Clock::time_point now, bool has_readiness);

  // Whether a reader of the ring's records waits for news now (a blocked
  // read or a poll): the drainer says so at each turn, before wait().
  void set_watched(bool watched) { watched_ = watched; }
  // Before poll(): `staged` while records wait in the staging queue.
  Wait wait(Clock::time_point now, bool staged) const;
  // After poll() (not woken by the hub): whether to drain the ring now.
  bool woke(Clock::time_point now, const Polled& polled);
  // After the drain woke() asked for.
  void drained(const Drained& d);
  // The end of the turn: true when the readers are to be told now (the
  // records since the last time are then counted as told).
  bool end_turn();
  // Records queued since the readers were last told.
  std::size_t untold() const { return added_; }

  // For tests.
  bool idle() const { return idle_; }
  std::chrono::milliseconds interval() const { return interval_; }
  // The time between sweeps now: interval(), or at least
  // kUnwatchedPollMs while no reader waits.
  std::chrono::milliseconds sweep_interval() const {
    return watched_ ? interval_ : std::max(interval_, std::chrono::milliseconds(kUnwatchedPollMs));
  }
  int quiet() const { return quiet_; }
  int useless() const { return useless_; }
  // Empty sweeps in a row after which the drainer waits for the readiness.
  int sweeps_before_idle() const;

 private:
  const bool has_readiness_;
  bool behind_ = true;  // the last drain took a full batch (or none yet)
  bool idle_ = false;   // waiting for the readiness (or kIdleWaitMs), not for a sweep
  bool has_ring_ = true;  // the last drain's CpuRing::has_ring()
  bool watched_ = true;   // set_watched()
  int quiet_ = 0;       // timed sweeps in a row that found nothing
  int useless_ = 0;     // turns in a row the readiness woke that found nothing here
  Clock::time_point rest_until_{}, last_ready_{}, last_sweep_;
  std::chrono::milliseconds interval_{kPollMs};
  std::size_t added_ = 0;  // records queued since readers were last told
  // The turn under way (woke() to end_turn()).
  Clock::time_point now_{};
  bool sweep_ = false, ready_ = false, written_ = false, drained_ = false;
  std::size_t before_ = 0;  // added_ when the turn began
};

}  // namespace eventfs
