#include "stream/drain_policy.h"

#include <algorithm>

namespace eventfs {

DrainPolicy::DrainPolicy(Clock::time_point now, bool has_readiness) : has_readiness_(has_readiness), last_sweep_(now) {}

int DrainPolicy::sweeps_before_idle() const { return 1 + (1 << std::min(useless_, 6)); }

DrainPolicy::Wait DrainPolicy::wait(Clock::time_point now, bool staged) const {
  Wait w;
  const bool resting = now < rest_until_;
  w.ring = !resting;
  w.readiness = idle_ && has_ring_;  // (a CPU with no ring has no record to be told of)
  auto wake_at = last_sweep_ + sweep_interval();
  if (resting) wake_at = std::min(wake_at, rest_until_);
  if (staged) wake_at = std::min(wake_at, now + std::chrono::milliseconds(kStagedRetryMs));
  if (idle_)
    w.timeout_ms = kIdleWaitMs;  // (nothing staged; a rest left over is covered: the readiness says when a record comes)
  else if (!behind_ && wake_at > now)  // rounded up: never spin on a sub-millisecond wait
    w.timeout_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now + std::chrono::microseconds(999)).count());
  return w;
}

bool DrainPolicy::woke(Clock::time_point now, const Polled& polled) {
  now_ = now;
  written_ = polled.written;  // (POLLERR too: swept, then not waited on again)
  sweep_ = written_ || now >= last_sweep_ + sweep_interval();
  if (sweep_) last_sweep_ = now;
  ready_ = polled.ring_ready;
  if (ready_) last_ready_ = now;
  if (idle_ && polled.timed_out) useless_ = 0;  // (no record anywhere for a second)
  idle_ = false;
  before_ = added_;
  drained_ = behind_ || ready_ || written_ || (sweep_ && now - last_ready_ >= 2 * sweep_interval());
  return drained_;
}

void DrainPolicy::drained(const Drained& d) {
  behind_ = !d.failed && d.got == d.batch;
  has_ring_ = d.has_ring;
  // (Not after a sweep that found nothing, the ring not ready: an idle
  // stream's reader would wake twice a sweep, at the rest's end too.)
  if (!behind_ && (d.got != 0 || d.failed || ready_)) rest_until_ = now_ + std::chrono::milliseconds(kRestMs);
  added_ += d.added;
  const bool found = d.got != 0 || d.failed || d.added != 0 || ready_;
  if (written_) useless_ = found ? 0 : useless_ + 1;
  if (found || written_)
    quiet_ = 0;
  else if (sweep_)
    ++quiet_;
  idle_ = (has_readiness_ || !d.has_ring) && !found && !written_ && d.staging_empty && d.settled &&
          quiet_ >= sweeps_before_idle();
}

bool DrainPolicy::end_turn() {
  if (!drained_ && sweep_) quiet_ = 0;  // (not looked at: the kernel's wakeups keep coming)
  if (sweep_)
    interval_ = added_ > before_ ? std::chrono::milliseconds(kPollMs)
                                 : std::min(interval_ * 2, std::chrono::milliseconds(kIdlePollMs));
  if (added_ && (!behind_ || added_ >= kNotifyRecords)) {
    added_ = 0;
    return true;
  }
  return false;
}

}  // namespace eventfs
