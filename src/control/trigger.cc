#include "control/trigger.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace eventfs {
namespace {

struct Fail {
  std::string message;
  std::size_t pos;
};

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

const std::vector<std::string>& known_trigger_commands() {
  static const std::vector<std::string> k = {"traceon", "traceoff", "stacktrace", "snapshot", "enable_event",
                                             "disable_event", "hist", "enable_hist", "disable_hist"};
  return k;
}

const std::vector<std::string>& trigger_command_words() {
  static const std::vector<std::string> k = [] {
    auto all = known_trigger_commands();
    all.push_back(kSaveCommand);
    return all;
  }();
  return k;
}

bool is_glob(std::string_view p) { return p.find_first_of("*?[") != std::string_view::npos; }

bool TriggerCommand::is_save() const { return command == kSaveCommand; }

std::string TriggerCommand::kernel_text(const std::string& kernel_target, const std::string& kernel_filter) const {
  std::string s = remove ? "!" : "";
  s += command;
  if (takes_target()) s += ":" + kernel_target;
  if (count) s += ":" + *count;
  if (has_filter) s += " if " + kernel_filter;
  return s;
}

TriggerResult parse_trigger(std::string_view text, TargetStyle style) {
  try {
    // A trailing newline (echo's) and blanks around the command are not part of it.
    std::size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    if (b == e) throw Fail{"Empty command", 0};
    for (std::size_t i = b; i < e; ++i) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '\n') throw Fail{"One command per write: found a second line", i};
      if (c < 0x20 && c != '\t') throw Fail{"Invalid character in command", i};
      if (c == 0x7f) throw Fail{"Invalid character in command", i};
    }
    std::string_view s = text.substr(b, e - b);
    TriggerCommand t;
    t.source = std::string(s);
    std::size_t i = 0;
    if (s[0] == '!') {
      t.remove = true;
      i = 1;
    }
    // Split off " if <filter>".
    std::string_view head = s;
    std::size_t if_at = std::string_view::npos;
    for (std::size_t k = i; k + 2 <= s.size(); ++k) {
      bool word_start = k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t');
      bool word_end = k + 2 == s.size() || s[k + 2] == ' ' || s[k + 2] == '\t';
      if (word_start && word_end && s.compare(k, 2, "if") == 0) {
        if_at = k;
        break;
      }
    }
    if (if_at != std::string_view::npos) {
      head = s.substr(0, if_at);
      std::size_t f = if_at + 2;
      while (f < s.size() && (s[f] == ' ' || s[f] == '\t')) ++f;
      if (f == s.size()) throw Fail{"Missing filter after 'if'", b + if_at};
      t.has_filter = true;
      t.filter = std::string(s.substr(f));
      t.filter_pos = b + f;
    }
    while (!head.empty() && (head.back() == ' ' || head.back() == '\t')) head.remove_suffix(1);
    if (head.find_first_of(" \t", i) != std::string_view::npos)
      throw Fail{"Invalid command: unexpected text (expected 'if <filter>')", b + head.find_first_of(" \t", i)};
    // command[:a[:b[:c]]]
    std::vector<std::pair<std::string, std::size_t>> parts;
    std::size_t start = i;
    for (std::size_t k = i; k <= head.size(); ++k) {
      if (k == head.size() || head[k] == ':') {
        parts.emplace_back(std::string(head.substr(start, k - start)), b + start);
        start = k + 1;
      }
    }
    t.command = parts[0].first;
    t.command_pos = parts[0].second;
    if (t.command.empty()) throw Fail{"Missing command", t.command_pos};
    const auto& known = trigger_command_words();
    if (std::find(known.begin(), known.end(), t.command) == known.end())
      throw Fail{"Unknown command '" + t.command + "'", t.command_pos};
    std::size_t next = 1;
    if (t.takes_target()) {
      std::size_t want = style == TargetStyle::Raw ? 2 : 1;
      if (parts.size() < 1 + want || parts[1].first.empty() ||
          (want == 2 && parts[2].first.empty()))
        throw Fail{style == TargetStyle::Raw ? "Missing target event: expected <system>:<event>"
                                             : "Missing target event",
                   parts.size() > 1 ? parts[1].second : b + head.size()};
      t.target = parts[1].first;
      t.target_pos = parts[1].second;
      if (want == 2) t.target += ":" + parts[2].first;
      next = 1 + want;
      if (style == TargetStyle::Stable && parts.size() > 2 && !all_digits(parts[2].first))
        throw Fail{"Stable triggers name stable events (enable_event:<event>); raw targets "
                   "<system>:<event> go in raw/<system>/<event>/trigger",
                   parts[1].second};
    }
    if (t.is_save()) {
      // save:NAME=FIELD
      if (parts.size() < 2 || parts[1].first.empty())
        throw Fail{"Missing variable: save:NAME=FIELD", parts.size() > 1 ? parts[1].second : b + head.size()};
      const std::string& spec = parts[1].first;
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw Fail{"Invalid save: save:NAME=FIELD names a variable and the field it takes", parts[1].second};
      t.target = spec;
      t.target_pos = parts[1].second;
      next = 2;
    }
    if (t.command == "hist") {
      // hist has its own key=value syntax; it is checked by the kernel.
      t.target.clear();
      next = parts.size();
    }
    if (parts.size() > next) {
      t.count = parts[next].first;
      t.count_pos = parts[next].second;
      if (!all_digits(*t.count)) throw Fail{"Invalid count", t.count_pos};
      if (parts.size() > next + 1) throw Fail{"Invalid command: too many ':' fields", parts[next + 1].second};
    }
    return t;
  } catch (const Fail& f) {
    return FilterError{f.message, f.pos};
  }
}

Result<std::vector<TriggerCommand>, FilterError> parse_triggers(std::string_view text, TargetStyle style) {
  std::vector<TriggerCommand> out;
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) return FilterError{"Invalid character in command", i};
  }
  std::size_t first = 0;
  while (first < n && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
  if (first == n) return FilterError{"Empty command", 0};
  // Where commands begin.
  std::vector<std::size_t> starts;
  char quote = 0;
  for (std::size_t i = 0; i < n; ++i) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (i > 0 && !std::isspace(static_cast<unsigned char>(text[i - 1]))) continue;
    std::size_t k = i + (c == '!');
    for (const auto& cmd : trigger_command_words()) {
      std::size_t end = k + cmd.size();
      if (text.compare(k, cmd.size(), cmd) == 0 &&
          (end == n || text[end] == ':' || std::isspace(static_cast<unsigned char>(text[end])))) {
        starts.push_back(i);
        break;
      }
    }
  }
  // Text before the first command is a command of its own (an unknown one).
  if (starts.empty() || starts[0] != first) starts.insert(starts.begin(), first);
  for (std::size_t j = 0; j < starts.size(); ++j) {
    const std::size_t b = starts[j], e = j + 1 < starts.size() ? starts[j + 1] : n;
    // The command alone, where it stands in the text, so that positions are the text's.
    std::string alone(n, ' ');
    for (std::size_t i = b; i < e; ++i) alone[i] = text[i] == '\n' ? ' ' : text[i];
    auto t = parse_trigger(alone, style);
    if (!t) return std::move(t).error();
    out.push_back(std::move(t).value());
  }
  return out;
}

std::vector<std::string> available_triggers_from(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string line;
  bool next_is_list = false;
  while (std::getline(in, line)) {
    if (line.rfind("# Available triggers:", 0) == 0) {
      next_is_list = true;
      continue;
    }
    if (next_is_list) {
      std::istringstream words(line.substr(line.rfind('#', 0) == 0 ? 1 : 0));
      std::string w;
      while (words >> w) out.push_back(w);
      break;
    }
  }
  return out;
}

}  // namespace eventfs
