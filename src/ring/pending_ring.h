// The ring of a CPU the kernel has not made one for yet.
//
// tracefs has per_cpu/cpuN for every possible CPU, but the kernel makes a
// CPU's ring buffer only when the CPU comes online: a CPU offline since the
// instance was made has none (its trace_pipe_raw polls POLLERR at once,
// refuses mmap with EINVAL and read with ENODEV). Such a CPU reads as an
// empty ring: no descriptor to poll, nothing drained; at most once per
// `retry`, a drain looks for the real ring, and once the kernel has made it
// (the CPU came online) everything goes to it. Common where a machine has
// more possible CPUs than online ones (virtual machines with room for
// hot-plugged CPUs).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ring/ring.h"

namespace eventfs {

class PendingCpuRing final : public CpuRing {
 public:
  static constexpr std::chrono::milliseconds kRetry{1000};
  // Opens the CPU's ring: the ring; no ring (a null one) while the kernel
  // still has none for the CPU; or why it cannot be opened.
  using Opener = std::function<Result<std::unique_ptr<CpuRing>>()>;

  PendingCpuRing(int cpu, Opener open, std::chrono::milliseconds retry = kRetry);

  // 0 while there is no ring (or EIO and the opener's reason when one cannot
  // be opened for another reason; tried again after `retry`), else the
  // ring's drain().
  Result<std::size_t> drain(RingSink& sink, std::size_t max_records) override;
  int poll_fd() const override { return ring_ ? ring_->poll_fd() : -1; }
  void count_losses_from(std::uint64_t overrun) override;
  // "offline" until the ring is there.
  const char* mode() const override { return ring_ ? ring_->mode() : "offline"; }
  RingStats stats() const override { return ring_ ? ring_->stats() : RingStats{}; }
  int cpu() const override { return cpu_; }
  std::uint32_t subbuf_size() const override { return ring_ ? ring_->subbuf_size() : 0; }
  bool has_ring() const override { return ring_ != nullptr; }
  // (Without a ring there is nothing to deliver: its reader waits, and
  // looks for the ring at least once per wait, every second.)
  bool settled() const override { return !ring_ || ring_->settled(); }

 private:
  int cpu_;
  Opener open_;
  std::chrono::milliseconds retry_;
  std::optional<std::chrono::steady_clock::time_point> next_try_;  // none: at the first drain
  std::optional<std::uint64_t> losses_from_;
  std::unique_ptr<CpuRing> ring_;
};

}  // namespace eventfs
