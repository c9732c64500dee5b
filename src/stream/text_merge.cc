#include "stream/text_merge.h"

#include <cstring>
#include <utility>

#include <eventfs/record.h>
#include <fmt/format.h>

namespace eventfs {
namespace {
// The text stream's mark of a gap, in trace_pipe's words.
std::string lost_line(std::size_t cpu, std::uint64_t count, bool unknown) {
  if (unknown) return fmt::format("CPU:{} [LOST EVENTS]\n", cpu);
  return fmt::format("CPU:{} [LOST {} EVENTS]\n", cpu, count);
}
}  // namespace

TextMerge::TextMerge(HubCpus& cpus, const Resolution& resolution, HubServices& hub)
    : cpus_(cpus), comms_([&hub] { return hub.saved_cmdlines(); }) {
  for (const auto& b : resolution.available) text_.emplace(b.event->id, TextFormat::compile(b));
}

int TextMerge::oldest_head() {
  int best = -1;
  std::uint64_t best_ts = 0;
  for (std::size_t c = 0; c < cpus_.size(); ++c) {
    RecordQueue& q = cpus_[c]->queue;
    if (q.empty()) continue;
    if (best < 0 || q.front_ts() < best_ts) {
      best = static_cast<int>(c);
      best_ts = q.front_ts();
    }
  }
  return best;
}

// A CPU's gap is marked when its first record after the gap is the oldest
// head, so the mark stands after the records that came before the gap.
void TextMerge::render_head(int cpu, std::string& out) {
  RecordQueue& q = cpus_[static_cast<std::size_t>(cpu)]->queue;
  if (q.has_dropped()) {  // (the front, if it was a lost-events record, is in this mark)
    render_gap(cpu, out);
    return;
  }
  eventfs_record_header h;
  std::memcpy(&h, q.front(), sizeof h);
  if (h.id == EVENTFS_ID_LOST) {
    eventfs_lost l;
    std::memcpy(&l, q.front() + sizeof h, sizeof l);
    out += lost_line(static_cast<std::size_t>(cpu), l.count, (l.flags & EVENTFS_LOST_COUNT_UNKNOWN) != 0);
  } else if (auto it = text_.find(h.id); it != text_.end()) {
    char comm[16];
    CommCache::Source from;
    const std::size_t n = comms_.name_of(h.pid, comm, &from);
    if (h.pid > 0 && (from == CommCache::Source::kNone || from == CommCache::Source::kTable))
      unsure_.push_back({out.size(), h.pid, n ? n : std::string_view("<...>").size()});
    it->second.render(out, {comm, n}, h.pid, static_cast<unsigned>(cpu), h.timestamp, q.front() + sizeof h);
  }
  q.pop();
}

void TextMerge::render_gap(int cpu, std::string& out) {
  std::uint64_t ts;
  const RecordQueue::Dropped d = cpus_[static_cast<std::size_t>(cpu)]->queue.take_gap(ts);
  if (d.any()) out += lost_line(static_cast<std::size_t>(cpu), d.count, d.unknown);
}

bool TextMerge::take(std::size_t max, std::string& out) {
  comms_.begin();
  unsure_.clear();
  const std::size_t start = out.size();
  {
    auto locks = lock_all(cpus_);
    while (out.size() - start < max) {
      const int best = oldest_head();
      if (best < 0) break;
      render_head(best, out);
    }
    // The gaps of CPUs with no record after them yet: marked now.
    for (std::size_t c = 0; c < cpus_.size(); ++c)
      if (cpus_[c]->queue.empty()) render_gap(static_cast<int>(c), out);
  }
  // (After the queues' locks: it may read saved_cmdlines.)
  if (!unsure_.empty() && comms_.refresh()) mend(out);
  return out.size() > start;
}

void TextMerge::mend(std::string& out) {
  std::string mended;
  std::size_t copied = 0;
  for (const Unsure& u : unsure_) {
    char comm[16];
    const std::size_t n = comms_.name_of(u.pid, comm);
    if (n == 0) continue;  // (still "<...>")
    char shown[16];
    for (std::size_t i = 0; i < n; ++i) shown[i] = printable_char(static_cast<unsigned char>(comm[i]));
    if (out.compare(u.at, u.len, shown, n) == 0) continue;  // the same name
    if (mended.empty()) mended.reserve(out.size() + 16 * unsure_.size());
    mended.append(out, copied, u.at - copied);
    mended.append(shown, n);
    copied = u.at + u.len;
  }
  if (copied == 0) return;
  mended.append(out, copied, std::string::npos);
  out.swap(mended);
}

}  // namespace eventfs
