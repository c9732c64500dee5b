#include "control/trigger_lines.h"

#include <algorithm>
#include <sstream>

namespace eventfs {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) out.push_back(l);
  return out;
}

std::vector<std::string> colon_parts(const std::string& head) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t k = 0; k <= head.size(); ++k)
    if (k == head.size() || head[k] == ':') {
      parts.push_back(head.substr(start, k - start));
      start = k + 1;
    }
  return parts;
}

std::string trigger_kind(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s[0] == '!') s.remove_prefix(1);
  s = s.substr(0, std::min(s.find(' '), s.size()));
  std::string_view cmd = s.substr(0, std::min(s.find(':'), s.size()));
  if (cmd == "enable_event" || cmd == "disable_event") {
    // enable_event:<system>:<event>[:count]
    auto first = s.find(':');
    auto second = s.find(':', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) return {};
    auto third = s.find(':', second + 1);
    return "event " + std::string(s.substr(first + 1, (third == std::string_view::npos ? s.size() : third) - first - 1));
  }
  if (cmd == "traceon" || cmd == "traceoff") return "traceon/traceoff";
  if (cmd == "stacktrace" || cmd == "snapshot") return std::string(cmd);
  return {};
}

std::string line_identity(const std::string& line) {
  std::string head = line.substr(0, line.find(" if "));
  const std::vector<std::string> parts = colon_parts(head);
  if ((parts[0] == "enable_event" || parts[0] == "disable_event") && parts.size() >= 3)
    return parts[0] + ":" + parts[1] + ":" + parts[2];
  return parts[0];
}

std::string input_form(const std::string& line) {
  std::string head = line.substr(0, line.find(" if "));
  std::string rest = line.substr(head.size());
  auto colon = head.rfind(':');
  if (colon != std::string::npos) {
    std::string last = head.substr(colon + 1);
    if (last == "unlimited") head.erase(colon);
    else if (last.rfind("count=", 0) == 0) head = head.substr(0, colon + 1) + last.substr(6);
  }
  return head + rest;
}

std::string removal_of(const std::string& text) {
  std::string undo = text.substr(0, text.find(" if "));
  auto colon = undo.rfind(':');
  if (colon != std::string::npos && undo.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    undo.erase(colon);
  return "!" + undo;
}

}  // namespace eventfs
