#include "recorder/read_pacing.h"

#include <algorithm>

namespace eventfs::recorder {

void ReadPacing::caught_up(Clock::time_point now, std::size_t most) {
  const bool had_start = started_;
  const Clock::time_point since = last_;
  started_ = true;
  last_ = now;
  if (!had_start || most == 0 || now <= since) {
    wait_ = kMaxWait;
    return;
  }
  // The bytes came over (since, now]: kTarget of them take that many times
  // kTarget / most as long.
  const auto took = now - since;
  const double share = static_cast<double>(kTarget) / static_cast<double>(most);
  const auto wait = std::chrono::duration_cast<Clock::duration>(took * share);
  wait_ = std::min<Clock::duration>(wait, kMaxWait);
}

}  // namespace eventfs::recorder
