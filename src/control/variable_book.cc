#include "control/variable_book.h"

#include <algorithm>

#include <fmt/format.h>

#include "control/control_text.h"
#include "control/trigger_lines.h"

namespace eventfs {

VariableValues VariableBook::values() const {
  std::lock_guard lock(mu_);
  return values_;
}

PlanningState VariableBook::planning_state() const {
  std::lock_guard lock(mu_);
  PlanningState state;
  state.variables = values_;
  for (const auto& a : saves_) state.saves.emplace(a.event.dir(), a.variable);
  return state;
}

std::string VariableBook::text() const {
  std::lock_guard lock(mu_);
  return variables_text(values_);
}

void VariableBook::set_values(VariableValues values) {
  std::lock_guard lock(mu_);
  values_ = std::move(values);
}

void VariableBook::restore(const std::set<std::string>& changed, const VariableValues& before,
                           const VariableValues& after) {
  std::lock_guard lock(mu_);
  for (const auto& name : changed) {
    auto was = before.find(name), meant = after.find(name);
    auto now = values_.find(name);
    const bool as_meant = meant == after.end() ? now == values_.end() : now != values_.end() && now->second == meant->second;
    if (!as_meant) continue;
    if (was != before.end())
      values_[name] = was->second;
    else if (!named_locked(name))  // (a write meanwhile may have named it: it stays declared)
      values_.erase(name);
  }
}

std::set<std::string> VariableBook::take(const std::vector<Captured>& batch, std::string& shown) {
  std::lock_guard lock(mu_);
  std::set<std::string> changed;
  for (const auto& c : batch) {
    auto it = values_.find(c.variable);
    if (it == values_.end() || it->second == c.value) continue;
    it->second = c.value;
    changed.insert(c.variable);
    shown += fmt::format("{}{}={}", shown.empty() ? "" : " ", c.variable, c.value);
  }
  return changed;
}

std::size_t VariableBook::uses_after(const std::string& dir, const std::set<std::string>& replaced,
                                     std::size_t adding) const {
  std::lock_guard lock(mu_);
  std::size_t kept = 0;
  for (const auto& u : uses_) kept += !(u.event.dir() == dir && replaced.count(u.identity));
  return kept + adding;
}

void VariableBook::drop_use(const std::string& dir, const std::string& identity) {
  std::lock_guard lock(mu_);
  std::erase_if(uses_, [&](const VariableUse& u) { return u.event.dir() == dir && u.identity == identity; });
}

void VariableBook::add_use(VariableUse use) {
  std::lock_guard lock(mu_);
  uses_.push_back(std::move(use));
}

std::optional<VariableUse> VariableBook::use(const std::string& dir, const std::string& identity) const {
  std::lock_guard lock(mu_);
  std::optional<VariableUse> now;
  for (const auto& u : uses_)
    if (u.event.dir() == dir && u.identity == identity) now = u;
  return now;
}

void VariableBook::use_rewritten(const std::string& dir, const std::string& identity, const std::string& from,
                                 const std::string& to) {
  std::lock_guard lock(mu_);
  for (auto& u : uses_)
    if (u.event.dir() == dir && u.identity == identity && u.raw == from) u.raw = to;
}

namespace {

bool names_any(const std::set<std::string>& names, const std::set<std::string>& changed) {
  return std::any_of(changed.begin(), changed.end(), [&](const std::string& n) { return names.count(n) > 0; });
}

}  // namespace

std::vector<std::pair<std::string, std::string>> VariableBook::uses_naming(const std::set<std::string>& changed) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& u : uses_)
    if (names_any(u.variables, changed)) out.emplace_back(u.event.dir(), u.identity);
  return out;
}

std::vector<int> VariableBook::saves_naming(const std::set<std::string>& changed) const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (const auto& sv : saves_)
    if (names_any(sv.variables, changed)) out.push_back(sv.id);
  return out;
}

bool VariableBook::named_locked(const std::string& name) const {
  for (const auto& u : uses_)
    if (u.variables.count(name)) return true;
  for (const auto& sv : saves_)
    if (sv.variable == name || sv.variables.count(name)) return true;
  return false;
}

std::string VariableBook::user_of(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::string user;
  for (const auto& u : uses_)
    if (u.variables.count(name)) user = u.event.shown() + "/" + (u.identity.empty() ? "filter" : "trigger");
  for (const auto& sv : saves_)
    if (sv.variable == name || sv.variables.count(name)) user = sv.event.shown() + "/trigger";
  return user;
}

std::optional<ArmedSave> VariableBook::save(int id) const {
  std::lock_guard lock(mu_);
  for (const auto& a : saves_)
    if (a.id == id) return a;
  return std::nullopt;
}

std::vector<int> VariableBook::saves_written(const EventName& ev, Names names, const TriggerPlan& plan,
                                             const std::vector<int>& armed) {
  std::lock_guard lock(mu_);
  std::vector<int> gone;
  std::size_t k = 0;
  for (const auto& sv : plan.saves) {
    if (sv.remove) {
      for (auto it = saves_.begin(); it != saves_.end();)
        if (it->event == ev && it->variable == sv.variable) {
          gone.push_back(it->id);
          it = saves_.erase(it);
        } else {
          ++it;
        }
      continue;
    }
    saves_.push_back({ev, sv.variable, sv.field, sv.condition, names, sv.variables, armed[k++],
                      sv.spec.count.has_value()});
    values_.try_emplace(sv.variable);  // unset until the first capture
  }
  return gone;
}

std::string VariableBook::save_lines(const std::string& dir,
                                     const std::function<std::uint64_t(int)>& remaining) const {
  std::lock_guard lock(mu_);
  return save_lines_locked(dir, remaining);
}

std::string VariableBook::save_lines_locked(const std::string& dir,
                                            const std::function<std::uint64_t(int)>& remaining) const {
  std::string out;
  for (const auto& sv : saves_) {
    if (sv.event.dir() != dir) continue;
    std::string count = "unlimited";
    if (sv.counted) count = fmt::format("count={}", remaining(sv.id));
    out += fmt::format("save:{}={}:{}{}\n", sv.variable, sv.field, count,
                       sv.condition.empty() ? "" : " if " + sv.condition);
  }
  return out;
}

std::string VariableBook::raw_filter(const std::string& dir, const std::string& kernel) const {
  std::lock_guard lock(mu_);
  const std::string raw = trimmed(kernel);
  for (const auto& u : uses_)
    if (u.event.dir() == dir && u.identity.empty() && u.raw == raw) return u.text + "\n";
  return kernel;
}

std::string VariableBook::raw_triggers(const std::string& dir, const std::string& kernel,
                                       const std::function<std::uint64_t(int)>& remaining) const {
  std::lock_guard lock(mu_);
  const std::string saves = save_lines_locked(dir, remaining);
  if (kernel.rfind("#", 0) == 0) return saves.empty() ? kernel : saves;
  std::string out;
  for (const auto& line : lines_of(kernel)) {
    std::string shown_line = line;
    if (auto at = line.find(" if "); at != std::string::npos) {
      const std::string filter = line.substr(at + 4), id = line_identity(line);
      for (const auto& u : uses_)
        if (u.event.dir() == dir && u.identity == id && u.raw == filter) {
          shown_line = line.substr(0, at + 4) + u.text;
          break;
        }
    }
    out += shown_line + "\n";
  }
  return out + saves;
}

}  // namespace eventfs
