#include "stream/comm_cache.h"

#include <cstdlib>
#include <cstring>

namespace eventfs {

std::size_t CommCache::name_of(std::int32_t pid, char* out) const {
  std::shared_lock lock(mu_);
  auto it = names_.find(pid);
  if (it == names_.end()) {
    missed_.store(true, std::memory_order_relaxed);
    return 0;
  }
  const std::size_t n = std::min<std::size_t>(it->second.size(), 16);
  std::memcpy(out, it->second.data(), n);
  return n;
}

void CommCache::refresh() {
  if (!missed_.load(std::memory_order_relaxed)) return;
  std::lock_guard one(refresh_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kMinRefresh) return;
  last_ = now;
  missed_.store(false, std::memory_order_relaxed);
  load(read_table_());
}

void CommCache::load(std::string_view text) {
  std::unordered_map<std::int32_t, std::string> fresh;
  std::size_t at = 0;
  while (at < text.size() && fresh.size() < kMaxNames) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 >= line.size()) continue;
    char* stop = nullptr;
    const std::string digits(line.substr(0, space));
    const long pid = std::strtol(digits.c_str(), &stop, 10);
    if (*stop || pid < 0 || pid > INT32_MAX) continue;
    fresh[static_cast<std::int32_t>(pid)] = std::string(line.substr(space + 1, 16));
  }
  std::unique_lock lock(mu_);
  names_.swap(fresh);
}

}  // namespace eventfs
