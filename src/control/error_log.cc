#include "control/error_log.h"

#include <time.h>

#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace eventfs {

std::string ErrorLog::head(const std::string& location, const std::string& message) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return fmt::format("[{:5}.{:06}] {}: error: {}\n", ts.tv_sec, ts.tv_nsec / 1000, location, message);
}

void ErrorLog::push(std::string entry) {
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
  while (entries_.size() > kMaxEntries) entries_.pop_front();
}

void ErrorLog::add_failure(const std::string& location, const std::string& message) { push(head(location, message)); }

void ErrorLog::add(const std::string& location, const std::string& message, const std::string& command,
                   std::size_t caret) {
  // Control characters would break the layout; show them escaped.
  std::string shown;
  for (unsigned char c : command) {
    if (c < 0x20 || c == 0x7f)
      shown += fmt::format("\\x{:02x}", c);
    else
      shown += static_cast<char>(c);
  }
  if (caret > shown.size()) caret = shown.size();
  push(head(location, message) + fmt::format("  Command: {}\n{}^\n", shown, std::string(11 + caret, ' ')));
}

std::string ErrorLog::text() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& e : entries_) out += e;
  return out;
}

void ErrorLog::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
}

bool ErrorLog::parse_last(const std::string& log, std::string& message, std::string& command, std::size_t& caret) {
  std::istringstream in(log);
  std::vector<std::string> lines;
  std::string l;
  while (std::getline(in, l)) lines.push_back(l);
  for (std::size_t i = lines.size(); i-- > 0;) {
    if (lines[i].empty() || lines[i][0] != '[') continue;
    auto err = lines[i].find(": error: ");
    if (err == std::string::npos) return false;
    message = lines[i].substr(err + 9);
    command.clear();
    caret = 0;
    if (i + 1 < lines.size() && lines[i + 1].rfind("  Command: ", 0) == 0) command = lines[i + 1].substr(11);
    if (i + 2 < lines.size()) {
      auto c = lines[i + 2].find('^');
      if (c != std::string::npos && c >= 11) caret = c - 11;
    }
    return true;
  }
  return false;
}

}  // namespace eventfs
