#include "control/trigger_planner.h"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "control/control_text.h"
#include "tracefs/raw_format_parser.h"

namespace eventfs {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The variables a write's save: commands set (and so declare).
std::set<std::string> declared_by_saves(const std::vector<TriggerCommand>& commands) {
  std::set<std::string> out;
  for (const auto& t : commands)
    if (t.is_save() && !t.remove) out.insert(t.save_variable());
  return out;
}

}  // namespace

FilterResult condition_in_kernel_names(const std::string& text, Names names, VariableValues vars,
                                       const std::set<std::string>& declared) {
  for (const auto& name : declared) vars.try_emplace(name);
  // A raw condition without variables goes to the kernel as it was written.
  if (names.is_kernel() && !names_a_variable(text, vars)) {
    TranslatedFilter out;
    out.raw = text;
    return out;
  }
  return translate_filter(text, names.fields(), &vars);
}

std::string TriggerPlanner::with_available(const std::string& message) const {
  if (message.rfind("Unknown command", 0) != 0) return message;
  return fmt::format("{} (available: {})", message, joined(available_));
}


Planned TriggerPlanner::check_command(const TriggerCommand& t) const {
  if (!contains(available_, t.command))
    return Refusal{EINVAL,
                   fmt::format("Command '{}' is not available on this kernel (available: {})", t.command,
                               joined(available_)),
                   t.command_pos};
  return {};
}


Result<TriggerPlan, Refusal> TriggerPlanner::plan(const EventName& ev, Names names,
                                                  const std::vector<TriggerCommand>& commands,
                                                  const PlanningState& state) const {
  TriggerPlan plan;
  plan.dirs.push_back(ev.dir());
  plan.declared = declared_by_saves(commands);
  for (const auto& t : commands)
    if (Planned ok = names.is_kernel() ? plan_raw(ev, t, state, plan) : plan_stable(names.stable(), t, state, plan); !ok) return std::move(ok).error();
  return plan;
}


Planned TriggerPlanner::plan_stable(const StableNames& s, const TriggerCommand& t, const PlanningState& state,
                                    TriggerPlan& plan) const {
  if (t.is_save()) return plan_save(t, Names::of(s), s.event, state, plan);
  if (Planned ok = check_command(t); !ok) return ok;
  if (t.command == "hist" || t.command == "enable_hist" || t.command == "disable_hist")
    return Refusal{EINVAL,
                   fmt::format("'{}' triggers name raw fields: use raw/{}/{}/trigger", t.command,
                               s.binding->raw.system, s.binding->raw.name),
                   t.command_pos};
  // Targets: one kernel target per raw event the matching stable events use.
  struct Target {
    std::string kernel, stable, dir;
  };
  std::vector<Target> targets;
  if (t.takes_target()) {
    for (const auto& other : stable_) {
      bool match = is_glob(t.target) ? fnmatch(t.target.c_str(), other.name.c_str(), 0) == 0 : t.target == other.name;
      if (!match) continue;
      std::string k = other.binding->raw.system + ":" + other.binding->raw.name;
      bool seen = false;
      for (const auto& tg : targets) seen |= tg.kernel == k;
      if (!seen) targets.push_back({k, other.name, other.dir});
    }
    if (targets.empty())
      return Refusal{EINVAL,
                     is_glob(t.target) ? fmt::format("No stable event matches '{}'", t.target)
                                       : fmt::format("Unknown event '{}' (see available_events)", t.target),
                     t.target_pos};
  } else {
    targets.push_back({"", "", ""});
  }
  TriggerPlan::Command c;
  c.has_filter = t.has_filter;
  c.filter_pos = t.filter_pos;
  c.command_pos = t.command_pos - (t.remove ? 1 : 0);
  if (t.has_filter) {
    auto translated = condition_in_kernel_names(t.filter, Names::of(s), state.variables, plan.declared);
    if (!translated)
      return Refusal{EINVAL, translated.error().message, t.filter_pos + translated.error().pos};
    c.filter = std::move(translated).value();
  }
  for (const auto& tg : targets) {
    TriggerWrite w{s.dir, t.kernel_text(tg.kernel, c.filter.raw), tg.dir, t.remove, plan.commands.size()};
    if (w.text.size() >= kPageSize)
      return Refusal{EINVAL,
                     fmt::format("Command too long in the kernel's names ({} bytes; the limit is {})",
                                 w.text.size(), kPageSize - 1),
                     t.command_pos};
    if (!tg.dir.empty()) plan.dirs.push_back(tg.dir);
    plan.writes.push_back(std::move(w));
    plan.records.push_back({t.remove, t.command + (tg.kernel.empty() ? "" : ":" + tg.kernel), c.filter.raw, tg.stable,
                            t.has_filter ? trimmed(t.filter) : "", c.filter.variables});
  }
  plan.commands.push_back(std::move(c));
  return {};
}


Planned TriggerPlanner::plan_raw(const EventName& event, const TriggerCommand& t, const PlanningState& state,
                                  TriggerPlan& plan) const {
  if (t.is_save()) return plan_save(t, Names::kernel(), event, state, plan);
  const std::string dir = event.dir();
  if (Planned ok = check_command(t); !ok) return ok;
  TriggerPlan::Command c;
  c.filter_pos = t.filter_pos;
  std::string raw_filter = t.filter;
  if (t.has_filter && t.command.find("hist") == std::string::npos) {
    auto translated = condition_in_kernel_names(t.filter, Names::kernel(), state.variables, plan.declared);
    if (!translated)
      return Refusal{EINVAL, translated.error().message, t.filter_pos + translated.error().pos};
    c.filter = std::move(translated).value();
    raw_filter = c.filter.raw;
    c.has_filter = !c.filter.variables.empty();  // (error positions need the mapping only then)
  }
  c.command_pos = t.command_pos - (t.remove ? 1 : 0);
  const std::size_t command = plan.commands.size();
  std::size_t first = plan.writes.size();
  if (t.command.find("hist") != std::string::npos) {
    plan.writes.push_back({dir, t.source, "", t.remove, command});
  } else if (t.takes_target()) {
    // The kernel takes one <system>:<event>; globs are expanded here.
    std::string tsys = t.target.substr(0, t.target.find(':'));
    std::string tev = t.target.substr(t.target.find(':') + 1);
    for (const auto& sys : tracefs_.systems()) {
      if (is_glob(tsys) ? fnmatch(tsys.c_str(), sys.c_str(), 0) != 0 : sys != tsys) continue;
      for (const auto& ev : tracefs_.events(sys))
        if (is_glob(tev) ? fnmatch(tev.c_str(), ev.c_str(), 0) == 0 : ev == tev) {
          plan.writes.push_back({dir, t.kernel_text(sys + ":" + ev, raw_filter), EventName{sys, ev}.dir(), t.remove,
                                 command});
          plan.dirs.push_back(plan.writes.back().target_dir);
          plan.records.push_back({t.remove, t.command + ":" + sys + ":" + ev, raw_filter, "", trimmed(t.filter),
                                  c.filter.variables});
        }
    }
    if (plan.writes.size() == first)
      return Refusal{EINVAL,
                     is_glob(t.target) ? fmt::format("No event matches '{}'", t.target)
                                       : fmt::format("Unknown event '{}'", t.target),
                     t.target_pos};
  } else {
    plan.writes.push_back({dir, t.kernel_text("", raw_filter), "", t.remove, command});
    plan.records.push_back({t.remove, t.command, raw_filter, "", trimmed(t.filter), c.filter.variables});
  }
  plan.commands.push_back(std::move(c));
  return {};
}


Planned TriggerPlanner::plan_save(const TriggerCommand& t, Names names, const EventName& ev,
                                   const PlanningState& state, TriggerPlan& plan) const {
  TriggerPlan::Save sv;
  sv.remove = t.remove;
  sv.variable = t.save_variable();
  sv.field = t.save_field();
  sv.command_pos = t.command_pos - (t.remove ? 1 : 0);
  if (!can_save_)
    return Refusal{EOPNOTSUPP, "save needs the kernel's tracefs: eventfs captures from the event's records",
                   sv.command_pos};
  // Whether the save is there at this point of the write.
  bool there = state.saves.count({ev.dir(), sv.variable}) != 0;
  for (const auto& earlier : plan.saves)
    if (earlier.variable == sv.variable) there = !earlier.remove;
  if (sv.remove) {
    if (!there) return Refusal{ENOENT, fmt::format("No save of '{}' on this event", sv.variable), sv.command_pos};
    plan.saves.push_back(std::move(sv));
    plan.commands.emplace_back();
    return {};
  }
  if (there)
    return Refusal{EEXIST,
                   fmt::format("File exists: 'save:{}' is set already (one save per variable and event)",
                               sv.variable),
                   sv.command_pos};
  if (std::string why = variable_name_problem(sv.variable, reserved_); !why.empty())
    return Refusal{EINVAL, why, t.target_pos};
  const std::size_t field_pos = t.target_pos + sv.variable.size() + 1;
  RawEvent raw;
  std::string raw_name = sv.field;
  if (!names.is_kernel()) {
    const StableNames& s = names.stable();
    raw = s.binding->raw;
    if (auto it = s.fields.find(sv.field); it != s.fields.end()) {
      if (it->second.task_state)
        return Refusal{EINVAL,
                       fmt::format("'{}' is computed from the task state; save takes a field as the kernel records it",
                                   sv.field),
                       field_pos};
      raw_name = it->second.raw_name;
    } else if (sv.field.rfind("common_", 0) != 0) {
      return Refusal{EINVAL, "Field not found", field_pos};
    }
  } else {
    auto format = tracefs_.read_format(ev.system, ev.event);
    auto parsed = format ? parse_raw_format(ev.system, *format) : Result<RawEvent>(format.error());
    if (!parsed)
      return Refusal{EINVAL, fmt::format("cannot read the format of {}:{}", ev.system, ev.event), sv.command_pos};
    raw = std::move(parsed).value();
  }
  const RawField* f = raw.field(raw_name);
  if (!f) return Refusal{EINVAL, "Field not found", field_pos};
  if (f->shape != FieldShape::Scalar || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
    return Refusal{EINVAL, fmt::format("save takes an integer field; '{}' is not one", sv.field), field_pos};
  if (t.count) sv.spec.count = std::stoull(*t.count);
  if (t.has_filter) {
    auto translated = condition_in_kernel_names(t.filter, names, state.variables, plan.declared);
    if (!translated)
      return Refusal{EINVAL, translated.error().message, t.filter_pos + translated.error().pos};
    const TranslatedFilter& tf = *translated;
    sv.spec.raw_filter = tf.raw;
    sv.condition = trimmed(t.filter);
    sv.variables = tf.variables;
  }
  sv.spec.system = raw.system;
  sv.spec.event = raw.name;
  sv.spec.variable = sv.variable;
  sv.spec.field = *f;
  for (const RawField& task : raw.common_fields)
    if (task.name == "common_pid") sv.spec.task_fields.push_back(task);
  for (const RawField& task : raw.fields)
    if (task.elem_type == "pid_t" && task.shape == FieldShape::Scalar) sv.spec.task_fields.push_back(task);
  if (!state.variables.count(sv.variable) && state.variables.size() >= kMaxVariables)
    return Refusal{ENOSPC, fmt::format("Too many variables (the limit is {})", kMaxVariables), t.target_pos};
  plan.saves.push_back(std::move(sv));
  plan.commands.emplace_back();
  return {};
}

}  // namespace eventfs
