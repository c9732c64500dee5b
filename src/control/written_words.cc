#include "control/written_words.h"

#include <iterator>

#include "control/trigger_lines.h"

namespace eventfs {

void WrittenWords::filter_written(const std::string& dir, const std::string& raw, const std::string& text,
                                  std::size_t writer) {
  std::lock_guard lock(mu_);
  filters_[dir] = {raw, text, writer};
}

void WrittenWords::filter_cleared(const std::string& dir) {
  std::lock_guard lock(mu_);
  filters_.erase(dir);
}

std::string WrittenWords::filter(const StableNames& s, const std::string& raw) const {
  std::lock_guard lock(mu_);
  auto it = filters_.find(s.dir);
  if (it != filters_.end() && it->second.raw == raw && it->second.writer == s.index) return it->second.stable;
  return rename_filter_fields(raw, s.raw_to_stable);
}

void WrittenWords::triggers_written(const std::string& dir, const std::vector<TriggerPlan::Record>& records,
                                    std::size_t writer) {
  std::lock_guard lock(mu_);
  for (const auto& r : records) {
    if (r.remove) {
      for (auto it = triggers_.begin(); it != triggers_.end();)
        it = (std::get<0>(it->first) == dir && std::get<1>(it->first) == r.identity) ? triggers_.erase(it)
                                                                                      : std::next(it);
    } else {
      triggers_[{dir, r.identity, r.raw_filter}] = {r.stable_target, r.stable_filter, writer};
    }
  }
}

std::string WrittenWords::trigger_line(const StableNames& s, const std::string& line) const {
  std::string head = line, raw_filter;
  bool has_filter = false;
  if (auto at = line.find(" if "); at != std::string::npos) {
    head = line.substr(0, at);
    raw_filter = line.substr(at + 4);
    has_filter = true;
  }
  const std::vector<std::string> parts = colon_parts(head);
  std::string cmd = parts[0], ktarget, rest;
  std::size_t next = 1;
  if ((cmd == "enable_event" || cmd == "disable_event") && parts.size() >= 4) {
    ktarget = parts[1] + ":" + parts[2];
    next = 3;
  }
  for (std::size_t k = next; k < parts.size(); ++k) rest += ":" + parts[k];
  std::string identity = cmd + (ktarget.empty() ? "" : ":" + ktarget);
  std::string target = ktarget, filter = raw_filter;
  bool known = false;
  {
    std::lock_guard lock(mu_);
    auto it = triggers_.find({s.dir, identity, has_filter ? raw_filter : ""});
    if (it != triggers_.end() && it->second.writer == s.index) {
      target = it->second.stable_target;
      filter = it->second.stable_filter;
      known = true;
    }
  }
  if (!known) {
    for (const auto& other : stable_)
      if (other.binding->raw.system + ":" + other.binding->raw.name == ktarget) {
        target = other.name;
        break;
      }
    filter = rename_filter_fields(raw_filter, s.raw_to_stable);
  }
  std::string out = cmd + (target.empty() ? "" : ":" + target) + rest;
  if (has_filter) out += " if " + filter;
  return out;
}

void WrittenWords::condition_rewritten(const std::string& dir, const std::string& identity, const std::string& from,
                                       const std::string& to) {
  std::lock_guard lock(mu_);
  if (identity.empty()) {
    if (auto f = filters_.find(dir); f != filters_.end() && f->second.raw == from) f->second.raw = to;
  } else if (auto it = triggers_.find({dir, identity, from}); it != triggers_.end()) {
    Trigger t = it->second;
    triggers_.erase(it);
    triggers_[{dir, identity, to}] = t;
  }
}

}  // namespace eventfs
