#include "ring/lost.h"

namespace eventfs {

void LostAccounting::report(RingSink& sink, RingStats& stats, std::uint64_t ts, std::uint64_t count,
                            bool unknown) {
  sink.lost(ts, count, unknown);
  accounted_ += count;
  stats.lost += count;
  ++stats.lost_reports;
}

void LostAccounting::subbuf(RingSink& sink, RingStats& stats, std::uint64_t ts, std::int64_t mark,
                            const std::uint64_t* overrun, bool every_swap) {
  ++stats.subbufs;
  if (mark > 0) {
    report(sink, stats, ts, static_cast<std::uint64_t>(mark), false);
  } else if (mark < 0) {
    ++stats.unknown_lost;
    report(sink, stats, ts, overrun ? unaccounted(*overrun) : 0, true);
  }
  if (overrun && every_swap) {
    if (std::uint64_t never_marked = unaccounted(prev_)) report(sink, stats, ts, never_marked, false);
    prev_ = *overrun;
  }
}

}  // namespace eventfs
