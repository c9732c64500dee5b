#include "stream/cpu_stats.h"

#include <pthread.h>
#include <sched.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "stream/ring_session.h"

namespace eventfs {

void accumulate(RingStats& acc, const RingStats& s) {
  acc.entries += s.entries;
  acc.lost += s.lost;
  acc.lost_reports += s.lost_reports;
  acc.unknown_lost += s.unknown_lost;
  acc.overrun += s.overrun;
  acc.subbufs += s.subbufs;
  acc.swaps += s.swaps;
}

namespace {

std::optional<std::uint64_t> decimal(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The kernel's "now ts:" line: "now ts: %5llu.%06lu" (seconds and
// microseconds) for the clocks that count ns, "now ts: %llu" for the others.
std::optional<std::uint64_t> kernel_now(const std::string& stats) {
  constexpr std::string_view kKey = "\nnow ts:";
  const std::string text = "\n" + stats;
  const std::size_t at = text.find(kKey);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + kKey.size(), end = text.find('\n', begin);
  std::string_view v(text.data() + begin, (end == std::string::npos ? text.size() : end) - begin);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  const std::size_t dot = v.find('.');
  if (dot == std::string_view::npos) return decimal(v);
  auto secs = decimal(v.substr(0, dot));
  auto usecs = decimal(v.substr(dot + 1));
  if (!secs || !usecs || v.size() - dot - 1 != 6) return std::nullopt;
  return *secs * 1000000000u + *usecs * 1000u;
}

// Runs `f` on CPU `cpu` where this thread may run there: the kernel's
// "now ts" is the clock of the CPU that reads it, and a CPU-local trace
// clock ("local", the default) need not agree between CPUs. Elsewhere
// (the CPU is offline or not ours), `f` runs where the thread is.
template <typename F>
auto on_cpu(std::size_t cpu, F f) {
  cpu_set_t was, one;
  CPU_ZERO(&one);
  bool pinned = false;
  if (cpu < CPU_SETSIZE && pthread_getaffinity_np(pthread_self(), sizeof was, &was) == 0 && CPU_ISSET(cpu, &was)) {
    CPU_SET(cpu, &one);
    pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  auto result = f();
  if (pinned) (void)pthread_setaffinity_np(pthread_self(), sizeof was, &was);
  return result;
}

}  // namespace

std::string cpu_stats_text(HubCpu& c, const RingSession& session, const RingFiles& files, std::size_t cpu) {
  std::string clock_now;
  if (auto kernel = on_cpu(cpu, [&] { return files.read_stats(static_cast<int>(cpu)); }))
    if (auto now = kernel_now(*kernel)) clock_now = fmt::format("clock now: {}\n", *now);
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
      "reader: {}\n"
      "{}",
      q.count(), s.entries, s.lost, s.lost_reports, s.unknown_lost, s.overrun, q.dropped_total(),
      q.memory_bytes() + c.staging_memory.load(std::memory_order_relaxed), s.subbufs,
      s.swaps, mode, clock_now);
}

}  // namespace eventfs
