#include "recorder/cpu_stats_lines.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs::recorder {
namespace {

// The text after "KEY: " on its line (nullopt: no such line).
std::optional<std::string_view> line_value(const std::string& stats, std::string_view key) {
  std::size_t at = 0;
  while (at < stats.size()) {
    std::size_t end = stats.find('\n', at);
    if (end == std::string::npos) end = stats.size();
    std::string_view line(stats.data() + at, end - at);
    if (line.size() >= key.size() + 2 && line.substr(0, key.size()) == key && line.substr(key.size(), 2) == ": ")
      return line.substr(key.size() + 2);
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> number(std::string_view v) {
  std::uint64_t n = 0;
  auto [stop, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || stop != v.data() + v.size()) return std::nullopt;
  return n;
}

}  // namespace

Result<std::uint64_t> parse_clock_now(const std::string& stats, const std::string& what) {
  auto v = line_value(stats, "clock now");
  if (!v)
    return fail(EPROTO, fmt::format("{} has no 'clock now:' line (an eventfs older than this eventfs-record), so the "
                                    "records from before the recording cannot be told apart",
                                    what));
  auto n = number(*v);
  if (!n) return fail(EPROTO, fmt::format("{}: 'clock now: {}' is not a number", what, *v));
  return *n;
}

Result<std::uint64_t> read_clock_now(const std::string& mount, int cpu) {
  const std::string path = fmt::format("{}/per_cpu/cpu{}/stats", mount, cpu);
  auto text = read_whole_file(path);
  if (!text) return fail(text.code(), fmt::format("cannot read {}: {}", path, std::strerror(text.code())));
  return parse_clock_now(*text, path);
}

std::optional<std::uint64_t> stats_number(const std::string& stats, const std::string& key) {
  auto v = line_value(stats, key);
  return v ? number(*v) : std::nullopt;
}

bool nothing_unread(const std::string& mount, int cpu) {
  auto text = read_whole_file(fmt::format("{}/per_cpu/cpu{}/stats", mount, cpu));
  if (!text) return true;
  const auto ring = stats_number(*text, "ring entries"), queued = stats_number(*text, "entries");
  return ring.value_or(0) == 0 && queued.value_or(0) == 0;
}

}  // namespace eventfs::recorder
