#include "control/controller.h"

#include <cerrno>
#include <optional>

#include <fmt/format.h>

#include "control/control_text.h"
#include "control/trigger_lines.h"

namespace eventfs {
namespace {

// What a refused write is shown as in error_log: the text without echo's newline.
std::string shown(std::string_view s) {
  while (!s.empty() && (s.back() == '\n')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Controller::Controller(const InstanceFiles& files, const Tracefs& tracefs, const Resolution& resolution,
                       WantedEvents* wanted)
    : files_(files),
      tracefs_(tracefs),
      wanted_(wanted),
      kernel_(files),
      words_(stable_),
      planner_(available_, stable_, tracefs_, reserved_names_),
      applier_(files, kernel_) {
  for (const auto& b : resolution.available) {
    StableNames s = stable_names_of(b);
    s.index = stable_.size();
    for (const auto& [name, f] : s.fields) reserved_names_.insert(name);
    s.always_on = files_.read(s.dir + "/enable").code() == ENOENT;
    stable_.push_back(std::move(s));
  }
  // The kernel lists its triggers in every trigger file; any event will do.
  for (const auto& sys : tracefs_.systems()) {
    auto events = tracefs_.events(sys);
    if (events.empty()) continue;
    if (auto text = files_.read(EventName{sys, events[0]}.dir() + "/trigger")) {
      available_ = available_triggers_from(*text);
      break;
    }
  }
  publish_wanted();
}

int Controller::refuse(const std::string& where, const Refusal& why, std::string_view command) {
  log_.add(where, why.reason, std::string(command), why.caret);
  return why.code;
}

int Controller::kernel_refused(const std::string& where, const KernelRefusal& why, std::string_view command,
                               const TranslatedFilter* filter, std::size_t filter_pos) {
  if (!why.logged) return refuse(where, why.code, why.reason, command, 0);
  // The kernel points into the raw filter; point into what the user wrote.
  return refuse(where, why.code, why.reason, command, caret_in_write(why, filter, filter_pos));
}

int Controller::check_size(const std::string& where, std::string_view data) {
  if (data.size() < kPageSize) return 0;
  return refuse(where, EINVAL, fmt::format("Command too long ({} bytes; the limit is {})", data.size(), kPageSize - 1),
                "", 0);
}

// The caller holds the event lock of `dir`.
KernelStatus Controller::set_enabled(const std::string& dir, const std::string& user, bool on) {
  const EnableUsers::Change change = enable_users_.set(dir, user, on);
  // Off for everyone, but on in the kernel: a fired enable_event trigger
  // leaves its target on when it is removed (as in tracefs). Switch it off.
  bool left_on = false;
  if (!change.after)
    if (auto k = files_.read(dir + "/enable")) left_on = k->rfind("1", 0) == 0 && k->find('*') == std::string::npos;
  if (change.before == change.after && !left_on) return {};
  // The kernel records from its enable on: the stable events that do not
  // want those records say so first (when it stops, they are told after,
  // by the write's PublishOnExit).
  if (change.after) publish_wanted();
  KernelStatus written = kernel_.write(dir + "/enable", change.after ? "1" : "0");
  if (!written) enable_users_.undo(dir, user, change);
  return written;
}

void Controller::publish_wanted() {
  if (!wanted_) return;
  std::lock_guard publishing(publish_mu_);
  for (std::size_t i = 0; i < stable_.size(); ++i) {
    const StableNames& s = stable_[i];
    const EnableUsers::Who who = enable_users_.who(s.dir, s.name);
    // Its own enable, or nobody's: then the raw records still in the ring
    // are from when it was on, and a reader opened later still gets them.
    bool on = s.always_on || !who.anyone || who.mine;
    if (!on)
      if (auto k = files_.read(s.dir + "/enable")) on = k->find('*') != std::string::npos;  // armed
    wanted_->set(i, on);
  }
}

// ---- enable

Controller::Target Controller::target_of(const ControlEvent& which) const {
  if (const auto* index = std::get_if<std::size_t>(&which)) {
    const StableNames& s = stable_.at(*index);
    return {s.name, s.event, Names::of(s)};
  }
  const EventName& ev = std::get<EventName>(which);
  return {"raw/" + ev.shown(), ev, Names::kernel()};
}

int Controller::read_enable(const ControlEvent& which, std::string& out) {
  const Target t = target_of(which);
  const std::string dir = t.event.dir();
  auto event = read_lock(dir);
  if (!t.names.is_kernel() && t.names.stable().always_on) {
    out = "1\n";
    return 0;
  }
  auto kernel = files_.read(dir + "/enable");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  // raw/ shows the kernel's state; so does a stable file whose event a
  // trigger holds in soft mode ("0*"/"1*").
  if (t.names.is_kernel() || k.find('*') != std::string::npos) {
    out = k;
    return 0;
  }
  const EnableUsers::Who who = enable_users_.who(dir, t.names.stable().name);
  // On in the kernel with nobody's enable: left on by a removed trigger.
  bool left_on = !who.anyone && k.rfind("1", 0) == 0;
  out = who.mine || left_on ? "1\n" : "0\n";
  return 0;
}

static bool parse_bool(std::string_view data, bool& on) {
  std::string v = trimmed(data);
  if (v != "0" && v != "1") return false;
  on = v == "1";
  return true;
}

int Controller::enable_write(const std::string& where, const EventName& ev, const std::string& user,
                             std::string_view data, Hold* held) {
  if (int e = check_size(where, data)) return e;
  const bool hold = trimmed(data) == "hold";
  bool on = true;
  if (!hold && !parse_bool(data, on))
    return refuse(where, EINVAL, "Invalid value: write 1 to enable, 0 to disable, hold to enable while open",
                  shown(data), 0);
  if (hold && !held)
    return refuse(where, EINVAL, "hold needs an open file to last as long as", shown(data), 0);
  if (hold && *held) return 0;  // this open holds it already
  const std::string as = hold ? enable_users_.hold_of(user) : user;
  if (KernelStatus set = set_enabled(ev.dir(), as, on); !set)
    return kernel_refused(where, set.error(), shown(data), nullptr, 0);
  if (hold) *held = std::make_unique<EnableHold>(*this, ev, as);
  return 0;
}

void Controller::end_hold(const EventName& ev, const std::string& user) {
  auto locks = write_locks({ev.dir()});
  PublishOnExit publish{*this};
  if (KernelStatus off = set_enabled(ev.dir(), user, false); !off)
    log_.add_failure("enable", fmt::format("{}: the end of a hold could not disable it: {}", ev.shown(),
                                           off.error().reason));
}

int Controller::write_enable(const ControlEvent& which, std::string_view data, Hold* held) {
  const Target t = target_of(which);
  auto locks = write_locks({t.event.dir()});
  PublishOnExit publish{*this};
  const std::string where = t.where + "/enable";
  if (t.names.is_kernel()) return enable_write(where, t.event, EnableUsers::kRawUser, data, held);
  const StableNames& s = t.names.stable();
  if (s.always_on) {
    if (int e = check_size(where, data)) return e;
    bool on = true;
    if (trimmed(data) != "hold" && !parse_bool(data, on))
      return refuse(where, EINVAL, "Invalid value: write 1 to enable, 0 to disable, hold to enable while open",
                    shown(data), 0);
    if (on) return 0;  // on for good
    return refuse(where, EINVAL,
                  fmt::format("{}:{} is always recorded: the kernel has no switch for it",
                              s.binding->raw.system, s.binding->raw.name),
                  shown(data), 0);
  }
  return enable_write(where, s.event, EnableUsers::stable_user(s.name), data, held);
}

// ---- filter

int Controller::read_filter(const ControlEvent& which, std::string& out) {
  const Target t = target_of(which);
  const std::string dir = t.event.dir();
  auto event = read_lock(dir);
  auto kernel = files_.read(dir + "/filter");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  if (t.names.is_kernel()) {
    out = book_.raw_filter(dir, k);
    return 0;
  }
  std::string raw = trimmed(k);
  if (raw == "none") {
    out = k;
    return 0;
  }
  out = words_.filter(t.names.stable(), raw) + "\n";
  return 0;
}

// A stable event's filter is translated to the kernel's names and read back
// in its own words (WrittenWords); a raw/ one is the kernel's own text,
// which the kernel reads back. "0" clears either.
int Controller::write_filter(const ControlEvent& which, std::string_view data) {
  const Target t = target_of(which);
  const std::string where = t.where + "/filter";
  const EventName& ev = t.event;
  const Names names = t.names;
  std::shared_lock values(variables_mu_);
  const std::string dir = ev.dir();
  auto locks = write_locks({dir});
  if (int e = check_size(where, data)) return e;
  std::string text = trimmed(data);
  const bool stable = !names.is_kernel();
  if (!stable && text.empty()) return refuse(where, EINVAL, "Meaningless filter expression", text, 0);
  if (int e = one_line(where, text)) return e;
  if (stable && text == "0") {
    if (KernelStatus cleared = kernel_.write(dir + "/filter", "0"); !cleared)
      return kernel_refused(where, cleared.error(), text, nullptr, 0);
    words_.filter_cleared(dir);
    book_.drop_use(dir, "");
    return 0;
  }
  TranslatedFilter tf;
  if (text == "0") {
    tf.raw = text;
  } else {
    auto translated = condition_in_kernel_names(text, names, book_.values());
    if (!translated) return refuse(where, EINVAL, translated.error().message, text, translated.error().pos);
    tf = std::move(translated).value();
  }
  if (stable && tf.raw.size() >= kPageSize)
    return refuse(where, EINVAL,
                  fmt::format("Filter too long in the kernel's names ({} bytes; the limit is {})", tf.raw.size(),
                              kPageSize - 1),
                  text, 0);
  std::unique_lock<std::mutex> uses_held;
  if (int e = check_variable_uses(where, dir, {""}, tf.variables.empty() ? 0 : 1, text, uses_held)) return e;
  if (KernelStatus set = replace_filter(dir, tf.raw); !set)
    return kernel_refused(where, set.error(), text, stable || !tf.variables.empty() ? &tf : nullptr, 0);
  if (stable)
    words_.filter_written(dir, tf.raw, text, names.stable().index);
  else
    words_.filter_cleared(dir);
  book_.drop_use(dir, "");
  if (!tf.variables.empty()) book_.add_use({ev, "", text, names, tf.variables, tf.raw});
  return 0;
}

// The kernel refuses a filter of several lines (6.18: EINVAL, and it keeps
// a piece of it): refused here, whole, before anything is written.
int Controller::one_line(const std::string& where, const std::string& text) {
  const auto nl = text.find('\n');
  if (nl == std::string::npos) return 0;
  return refuse(where, EINVAL, "One filter per write: found a second line", text, nl);
}

// The kernel keeps a filter it refused (it reads back with the parse
// error), so a refusal would drop the filter that was there: put it back.
KernelStatus Controller::replace_filter(const std::string& dir, const std::string& raw) {
  auto before = files_.read(dir + "/filter");
  KernelStatus written = kernel_.write(dir + "/filter", raw);
  if (!written && before) {
    std::string prev = trimmed(*before);
    kernel_.put_back(dir + "/filter", prev == "none" || prev.empty() ? "0" : prev);
  }
  return written;
}

// ---- trigger

int Controller::write_trigger(const ControlEvent& which, std::string_view data) {
  const Target t = target_of(which);
  const std::string where = t.where + "/trigger";
  const EventName& ev = t.event;
  const Names names = t.names;
  std::shared_lock values(variables_mu_);
  if (int e = check_size(where, data)) return e;
  std::string text = shown(data);
  auto parsed = parse_triggers(data, names.is_kernel() ? TargetStyle::Raw : TargetStyle::Stable);
  if (!parsed) return refuse(where, EINVAL, planner_.with_available(parsed.error().message), text, parsed.error().pos);
  const std::string dir = ev.dir();
  Result<TriggerPlan, Refusal> planned = planner_.plan(ev, names, *parsed, book_.planning_state());
  if (!planned) return refuse(where, planned.error(), text);
  const TriggerPlan& plan = *planned;
  std::set<std::string> replaced;
  std::size_t adding = 0;
  for (const auto& r : plan.records) {
    replaced.insert(r.identity);
    adding += !r.remove && !r.variables.empty();
  }
  auto locks = write_locks(plan.dirs);
  std::unique_lock<std::mutex> uses_held;
  if (int e = check_variable_uses(where, dir, replaced, adding, "", uses_held)) return e;
  PublishOnExit publish{*this};
  std::vector<int> armed;
  if (int e = arm_saves(where, plan, text, armed)) return e;
  auto shown_as = [&](const std::string&, const std::string& line) {
    return names.is_kernel() ? line : words_.trigger_line(names.stable(), line);
  };
  if (auto applied = applier_.apply(plan, shown_as); !applied) {
    for (int id : armed) captures_->disarm(id);
    return refuse(where, applied.error(), text);
  }
  for (int id : book_.saves_written(ev, names, plan, armed)) captures_->disarm(id);
  for (const auto& r : plan.records) {
    book_.drop_use(dir, r.identity);
    if (!r.remove && !r.variables.empty())
      book_.add_use({ev, r.identity, r.stable_filter, names, r.variables, r.raw_filter});
  }
  // (raw/ reads the kernel's own words back)
  if (!names.is_kernel()) words_.triggers_written(dir, plan.records, names.stable().index);
  return 0;
}

std::uint64_t Controller::remaining(int save) const {
  return captures_ ? captures_->remaining(save).value_or(0) : 0;
}

int Controller::read_trigger(const ControlEvent& which, std::string& out) {
  const Target t = target_of(which);
  const std::string dir = t.event.dir();
  auto event = read_lock(dir);
  auto kernel = files_.read(dir + "/trigger");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  auto left = [this](int id) { return remaining(id); };
  if (t.names.is_kernel()) {
    out = book_.raw_triggers(dir, k, left);
    return 0;
  }
  const std::string saves = book_.save_lines(dir, left);
  if (k.rfind("#", 0) == 0) {  // no triggers: the kernel's header, as it is
    out = saves.empty() ? k : saves;
    return 0;
  }
  out.clear();
  for (const auto& line : lines_of(k)) out += words_.trigger_line(t.names.stable(), line) + "\n";
  out += saves;
  return 0;
}

// ---- variables

int Controller::check_variable_uses(const std::string& where, const std::string& dir,
                                    const std::set<std::string>& replaced, std::size_t adding, std::string_view text,
                                    std::unique_lock<std::mutex>& held) {
  if (adding == 0) return 0;
  held = std::unique_lock(uses_mu_);
  if (book_.uses_after(dir, replaced, adding) <= kMaxVariableUses) return 0;
  return refuse(where, ENOSPC,
                fmt::format("Too many conditions naming variables (the limit is {}: a change of value rewrites "
                            "each of them in the kernel)",
                            kMaxVariableUses),
                text, 0);
}

int Controller::arm_saves(const std::string& where, const TriggerPlan& plan, std::string_view text,
                          std::vector<int>& armed) {
  for (const auto& sv : plan.saves) {
    if (sv.remove) continue;
    auto id = captures_->arm(sv.spec);
    if (!id) {
      for (int a : armed) captures_->disarm(a);
      armed.clear();
      return refuse(where, id.code(), id.reason(), std::string(text), sv.command_pos);
    }
    armed.push_back(*id);
  }
  return 0;
}

std::string Controller::reapply(const std::set<std::string>& changed, const std::function<bool()>& stopping) {
  std::lock_guard rewriting(rewrite_mu_);
  const auto uses = book_.uses_naming(changed);
  const auto saves = book_.saves_naming(changed);
  std::string first_error;
  for (const auto& [dir, identity] : uses) {
    if (stopping && stopping()) return first_error;
    auto locks = write_locks({dir});
    // The use as it is now: a write to the event may have changed or
    // removed it since, translated with the values of its own moment.
    std::optional<VariableUse> now = book_.use(dir, identity);
    if (!now) continue;
    const VariableUse& u = *now;
    auto translated = condition_in_kernel_names(u.text, u.names, book_.values());
    if (!translated || translated->raw == u.raw) continue;
    const std::string& raw = translated->raw;
    KernelStatus set =
        u.identity.empty() ? replace_filter(dir, raw) : applier_.rewrite_condition(dir, u.identity, u.raw, raw);
    if (!set) {
      if (first_error.empty()) first_error = set.reason();
      continue;
    }
    book_.use_rewritten(dir, u.identity, u.raw, raw);
    words_.condition_rewritten(dir, u.identity, u.raw, raw);
  }
  for (int id : saves) {
    if (stopping && stopping()) return first_error;
    std::optional<ArmedSave> sv = book_.save(id);
    if (!sv || !captures_) continue;
    auto translated = condition_in_kernel_names(sv->condition, sv->names, book_.values());
    if (!translated) continue;
    if (Status set = captures_->refilter(id, translated->raw); !set && first_error.empty()) first_error = set.reason();
  }
  return first_error;
}

void Controller::captured(const std::vector<Captured>& batch, const std::function<bool()>& stopping) {
  std::string values;
  std::set<std::string> changed;
  {
    std::unique_lock one(variables_mu_);
    changed = book_.take(batch, values);
  }
  if (changed.empty()) return;
  if (std::string e = reapply(changed, stopping); !e.empty())
    log_.add_failure("variables", fmt::format("{} (captured): {}", values, e));
}

int Controller::read_variables(std::string& out) {
  out = book_.text();
  return 0;
}

int Controller::write_variables(std::string_view data) {
  const std::string where = "variables";
  if (int e = check_size(where, data)) return e;
  const std::string text = shown(data);
  auto parsed = parse_variable_changes(data, reserved_names_);
  if (!parsed) return refuse(where, EINVAL, parsed.error().message, text, parsed.error().pos);
  std::unique_lock one(variables_mu_);
  VariableValues before = book_.values(), after = before;
  for (const auto& c : *parsed) {
    if (c.kind == VariableChange::Kind::Set) {
      after[c.name] = c.value;
    } else if (c.kind == VariableChange::Kind::Declare) {
      after[c.name] = std::nullopt;
    } else {
      if (!after.count(c.name)) return refuse(where, ENOENT, fmt::format("No variable '{}'", c.name), text, c.pos);
      if (std::string user = book_.user_of(c.name); !user.empty())
        return refuse(where, EBUSY, fmt::format("'{}' is in use ({}): remove that first", c.name, user), text,
                      c.pos);
      after.erase(c.name);
    }
  }
  if (after.size() > kMaxVariables)
    return refuse(where, ENOSPC, fmt::format("Too many variables (the limit is {})", kMaxVariables), text, 0);
  std::set<std::string> changed;
  for (const auto& [name, v] : before)
    if (auto it = after.find(name); it == after.end() || it->second != v) changed.insert(name);
  for (const auto& [name, v] : after)
    if (!before.count(name)) changed.insert(name);
  book_.set_values(after);
  one.unlock();  // the rewrites go event by event, without holding up writes to other events
  if (std::string e = reapply(changed); !e.empty()) {
    one.lock();
    book_.restore(changed, before, after);
    one.unlock();
    reapply(changed);
    return refuse(where, EINVAL, "the kernel refused a condition with the new value: " + e, text, 0);
  }
  return 0;
}

}  // namespace eventfs
