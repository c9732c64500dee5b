#include "recorder/start_time.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs::recorder {

Result<std::uint64_t> parse_clock_now(const std::string& stats, const std::string& what) {
  constexpr std::string_view kKey = "\nclock now: ";
  const std::string text = "\n" + stats;
  const std::size_t at = text.find(kKey);
  if (at == std::string::npos)
    return fail(EPROTO, fmt::format("{} has no 'clock now:' line (an eventfs older than this eventfs-record), so the "
                                    "records from before the recording cannot be told apart",
                                    what));
  const char* begin = text.data() + at + kKey.size();
  const char* end = text.data() + text.size();
  if (const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end - begin))) end = nl;
  std::uint64_t v = 0;
  auto [stop, ec] = std::from_chars(begin, end, v);
  if (begin == end || ec != std::errc() || stop != end)
    return fail(EPROTO, fmt::format("{}: 'clock now: {}' is not a number", what, std::string(begin, end)));
  return v;
}

Result<std::uint64_t> read_clock_now(const std::string& mount, int cpu) {
  const std::string path = fmt::format("{}/per_cpu/cpu{}/stats", mount, cpu);
  auto text = read_whole_file(path);
  if (!text) return fail(text.code(), fmt::format("cannot read {}: {}", path, std::strerror(text.code())));
  return parse_clock_now(*text, path);
}

}  // namespace eventfs::recorder
