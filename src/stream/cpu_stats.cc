#include "stream/cpu_stats.h"


#include <cctype>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "stream/ring_session.h"
#include "stream/thread_placement.h"

namespace eventfs {

void accumulate(RingStats& acc, const RingStats& s) {
  acc.entries += s.entries;
  acc.lost += s.lost;
  acc.lost_reports += s.lost_reports;
  acc.unknown_lost += s.unknown_lost;
  acc.overrun += s.overrun;
  acc.subbufs += s.subbufs;
  acc.swaps += s.swaps;
  acc.spliced += s.spliced;
  acc.splices += s.splices;
}

namespace {

std::optional<std::uint64_t> decimal(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The text after "KEY:" on a line of the kernel's stats, trimmed.
std::optional<std::string_view> kernel_line(const std::string& stats, std::string_view key) {
  std::size_t at = 0;
  while (at < stats.size()) {
    std::size_t end = stats.find('\n', at);
    if (end == std::string::npos) end = stats.size();
    std::string_view line(stats.data() + at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    std::string_view v = line.substr(key.size() + 1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  }
  return std::nullopt;
}

// The kernel's "now ts:" line: "now ts: %5llu.%06lu" (seconds and
// microseconds) for the clocks that count ns, "now ts: %llu" for the others.
std::optional<std::uint64_t> kernel_now(const std::string& stats) {
  auto line = kernel_line(stats, "now ts");
  if (!line) return std::nullopt;
  std::string_view v = *line;
  const std::size_t dot = v.find('.');
  if (dot == std::string_view::npos) return decimal(v);
  auto secs = decimal(v.substr(0, dot));
  auto usecs = decimal(v.substr(dot + 1));
  if (!secs || !usecs || v.size() - dot - 1 != 6) return std::nullopt;
  return *secs * 1000000000u + *usecs * 1000u;
}

}  // namespace

std::string cpu_stats_text(HubCpu& c, const RingSession& session, const RingFiles& files, std::size_t cpu) {
  std::string kernel_lines;  // the ring's unread records and the clock, from the kernel's stats
  if (auto kernel = on_cpu(static_cast<int>(cpu), [&] { return files.read_stats(static_cast<int>(cpu)); })) {
    if (auto unread = kernel_line(*kernel, "entries"); unread && decimal(*unread))
      kernel_lines += fmt::format("ring entries: {}\n", *decimal(*unread));
    if (auto now = kernel_now(*kernel)) kernel_lines += fmt::format("clock now: {}\n", *now);
  }
  std::lock_guard lock(c.mu);
  RingStats s = c.closed;
  const char* mode = "closed";
  if (const CpuRing* ring = session.ring_of(cpu)) {  // (the rings change under every CPU's mu)
    std::lock_guard ring_lock(c.ring_mu);
    accumulate(s, ring->stats());
    mode = ring->mode();
  }
  const RecordQueue& q = c.queue;
  return fmt::format(
      "entries: {}\n"
      "read events: {}\n"
      "lost events: {}\n"
      "lost reports: {}\n"
      "lost reports without count: {}\n"
      "overrun: {}\n"
      "dropped by eventfs: {}\n"
      "queue memory: {}\n"
      "sub-buffers: {}\n"
      "reader swaps: {}\n"
      "sub-buffers spliced: {}\n"
      "splice calls: {}\n"
      "reader: {}\n"
      "{}",
      q.count() + c.staging_records.load(std::memory_order_relaxed), s.entries, s.lost, s.lost_reports,
      s.unknown_lost, s.overrun, q.dropped_total(), q.memory_bytes() + c.staging_memory.load(std::memory_order_relaxed),
      s.subbufs, s.swaps, s.spliced, s.splices, mode, kernel_lines);
}

}  // namespace eventfs
