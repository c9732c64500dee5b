// Lost-event accounting shared by the ring readers.
//
// The kernel reports lost (overwritten) events in two ways:
//  * a mark on the sub-buffer that follows the gap: flag bits in its commit
//    word, and the count stored after its data when there was room (a full
//    sub-buffer has none: the count is then "unknown");
//  * its per-CPU overrun counter: the meta page's `overrun` in mmap mode
//    (refreshed by every GET_READER, in the same ioctl as the swap), the
//    "overrun:" line of per_cpu/cpuN/stats otherwise.
// Both count the same losses (the mark's count is the counter's growth between
// two reader swaps), so they are folded into lost() reports at the start of
// the sub-buffer after the gap, never double counted:
//  * a mark with a count is reported as is;
//  * a mark without one is reported with the counter's growth that no report
//    has accounted for yet (flagged unknown, as the kernel did not say);
//  * with the counter sampled at every swap (mmap), growth seen at the
//    previous swap that no mark has claimed by now (the kernel attributes a
//    loss to the next swap at the latest) was never marked and is reported
//    on its own.
#pragma once

#include <cstdint>

#include "ring/ring.h"

namespace eventfs {

class LostAccounting {
 public:
  // `overrun`: the counter when the losses that follow were not yet reported
  // (when the reader opened, or when an earlier reader of the ring stopped).
  void open(std::uint64_t overrun) {
    base_ = prev_ = overrun;
    accounted_ = 0;
  }

  // One new sub-buffer with time stamp `ts` and lost mark `mark` (0 none,
  // n, -1 no count). `overrun`: the counter now, or nullptr if not sampled.
  // `every_swap`: the counter is sampled at every swap.
  void subbuf(RingSink& sink, RingStats& stats, std::uint64_t ts, std::int64_t mark,
              const std::uint64_t* overrun, bool every_swap);

  std::uint64_t growth(std::uint64_t overrun_now) const { return overrun_now > base_ ? overrun_now - base_ : 0; }

 private:
  void report(RingSink& sink, RingStats& stats, std::uint64_t ts, std::uint64_t count, bool unknown);
  std::uint64_t unaccounted(std::uint64_t overrun) const {
    std::uint64_t g = growth(overrun);
    return g > accounted_ ? g - accounted_ : 0;
  }
  std::uint64_t base_ = 0;       // counter at open
  std::uint64_t prev_ = 0;       // counter at the previous swap (every_swap)
  std::uint64_t accounted_ = 0;  // sum of the counts reported
};

}  // namespace eventfs
