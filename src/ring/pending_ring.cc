#include "ring/pending_ring.h"

#include <cerrno>

namespace eventfs {

PendingCpuRing::PendingCpuRing(int cpu, Opener open, std::chrono::milliseconds retry)
    : cpu_(cpu), open_(std::move(open)), retry_(retry) {}

Result<std::size_t> PendingCpuRing::drain(RingSink& sink, std::size_t max_records) {
  if (!ring_) {
    const auto now = std::chrono::steady_clock::now();
    if (next_try_ && now < *next_try_) return std::size_t{0};
    next_try_ = now + retry_;
    Result<std::unique_ptr<CpuRing>> ring = open_();
    if (!ring) return fail(EIO, ring.reason());
    ring_ = std::move(*ring);
    if (!ring_) return std::size_t{0};
    if (losses_from_) ring_->count_losses_from(*losses_from_);
  }
  return ring_->drain(sink, max_records);
}

void PendingCpuRing::count_losses_from(std::uint64_t overrun) {
  losses_from_ = overrun;
  if (ring_) ring_->count_losses_from(overrun);
}

}  // namespace eventfs
