#include "control/controller.h"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "control/control_text.h"

#include <fmt/format.h>

namespace eventfs {
namespace {

// What a refused write is shown as in error_log: the text without echo's newline.
std::string shown(std::string_view s) {
  while (!s.empty() && (s.back() == '\n')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) out.push_back(l);
  return out;
}

// "enable_event:sched:sched_switch:unlimited" -> its ':'-separated parts.
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

}  // namespace

Controller::Controller(const InstanceFiles& files, const Tracefs& tracefs, const Resolution& resolution,
                       WantedEvents* wanted)
    : files_(files),
      tracefs_(tracefs),
      wanted_(wanted),
      kernel_(files),
      planner_(available_, stable_, tracefs_, reserved_names_) {
  for (const auto& b : resolution.available) {
    StableNames s = stable_names_of(b);
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

int Controller::refuse(const std::string& where, int err, const std::string& message, std::string_view command,
                       std::size_t caret) {
  log_.add(where, message, std::string(command), caret);
  return err;
}

int Controller::kernel_refused(const std::string& where, const KernelRefusal& why, std::string_view command,
                               const TranslatedFilter* filter, std::size_t filter_pos) {
  if (!why.logged) return refuse(where, why.code, why.reason, command, 0);
  // The kernel points into the raw filter; point into what the user wrote.
  std::size_t caret = filter_pos + (filter ? filter->stable_pos_of(why.caret) : why.caret);
  return refuse(where, why.code, why.reason, command, caret);
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
  KernelStatus written = kernel_write(dir + "/enable", change.after ? "1" : "0");
  if (!written) enable_users_.undo(dir, user, change);
  return written;
}

void Controller::publish_wanted() {
  if (!wanted_) return;
  std::lock_guard publishing(publish_mu_);
  for (std::size_t i = 0; i < stable_.size(); ++i) {
    const Stable& s = stable_[i];
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

int Controller::read_enable(std::size_t index, std::string& out) {
  const Stable& s = stable_.at(index);
  auto event = read_lock(s.dir);
  if (s.always_on) {
    out = "1\n";
    return 0;
  }
  auto kernel = files_.read(s.dir + "/enable");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  // "0*"/"1*": a trigger holds the event in soft mode; show the kernel's state.
  if (k.find('*') != std::string::npos) {
    out = k;
    return 0;
  }
  const EnableUsers::Who who = enable_users_.who(s.dir, s.name);
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

int Controller::write_enable(std::size_t index, std::string_view data, Hold* held) {
  const Stable& s = stable_.at(index);
  auto locks = write_locks({s.dir});
  PublishOnExit publish{*this};
  std::string where = s.name + "/enable";
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

int Controller::write_raw_enable(const std::string& system, const std::string& event, std::string_view data,
                                 Hold* held) {
  const EventName ev{system, event};
  auto locks = write_locks({ev.dir()});
  PublishOnExit publish{*this};
  return enable_write(fmt::format("raw/{}/{}/enable", system, event), ev, EnableUsers::kRawUser, data, held);
}

// ---- filter

int Controller::read_filter(std::size_t index, std::string& out) {
  const Stable& s = stable_.at(index);
  auto event = read_lock(s.dir);
  auto kernel = files_.read(s.dir + "/filter");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  std::string raw = trimmed(k);
  if (raw == "none") {
    out = k;
    return 0;
  }
  std::lock_guard lock(state_mu_);
  auto it = filters_.find(s.dir);
  if (it != filters_.end() && it->second.raw == raw && it->second.writer == index)
    out = it->second.stable + "\n";
  else
    out = rename_filter_fields(raw, s.raw_to_stable) + "\n";
  return 0;
}

int Controller::write_filter(std::size_t index, std::string_view data) {
  const Stable& s = stable_.at(index);
  return write_filters(s.name + "/filter", s.event, &s, data);
}

int Controller::write_raw_filter(const std::string& system, const std::string& event, std::string_view data) {
  return write_filters(fmt::format("raw/{}/{}/filter", system, event), EventName{system, event}, nullptr, data);
}

// A stable event's filter (`s`) is translated to the kernel's names and read
// back in its own words (filters_); a raw/ one (no `s`) is the kernel's own
// text, which the kernel reads back. "0" clears either.
int Controller::write_filters(const std::string& where, const EventName& ev, const Stable* s, std::string_view data) {
  std::shared_lock values(variables_mu_);
  const std::string dir = ev.dir();
  auto locks = write_locks({dir});
  if (int e = check_size(where, data)) return e;
  std::string text = trimmed(data);
  if (!s && text.empty()) return refuse(where, EINVAL, "Meaningless filter expression", text, 0);
  if (int e = one_line(where, text)) return e;
  if (s && text == "0") {
    if (KernelStatus cleared = kernel_write(dir + "/filter", "0"); !cleared)
      return kernel_refused(where, cleared.error(), text, nullptr, 0);
    std::lock_guard lock(state_mu_);
    filters_.erase(dir);
    drop_use(dir, "");
    return 0;
  }
  TranslatedFilter tf;
  if (text == "0") {
    tf.raw = text;
  } else {
    auto translated = condition_to_raw(text, s);
    if (!translated) return refuse(where, EINVAL, translated.error().message, text, translated.error().pos);
    tf = std::move(translated).value();
  }
  if (s && tf.raw.size() >= kPageSize)
    return refuse(where, EINVAL,
                  fmt::format("Filter too long in the kernel's names ({} bytes; the limit is {})", tf.raw.size(),
                              kPageSize - 1),
                  text, 0);
  if (int e = check_variable_uses(where, dir, {""}, tf.variables.empty() ? 0 : 1, text)) return e;
  if (KernelStatus set = replace_filter(dir, tf.raw); !set)
    return kernel_refused(where, set.error(), text, s || !tf.variables.empty() ? &tf : nullptr, 0);
  std::lock_guard lock(state_mu_);
  if (s)
    filters_[dir] = {tf.raw, text, static_cast<std::size_t>(s - stable_.data())};
  else
    filters_.erase(dir);
  drop_use(dir, "");
  if (!tf.variables.empty()) note_use({ev, "", text, s, tf.variables, tf.raw});
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
  KernelStatus written = kernel_write(dir + "/filter", raw);
  if (!written && before) {
    std::string prev = trimmed(*before);
    put_back(dir + "/filter", prev == "none" || prev.empty() ? "0" : prev);
  }
  return written;
}

// ---- trigger

namespace {

// What the kernel counts as the same trigger when it refuses a second one
// with EEXIST: one enable_event or disable_event per target, one of traceon
// and traceoff, one stacktrace, one snapshot. Empty for commands whose rules
// are the kernel's alone (hist).
std::string trigger_kind(std::string_view kernel_text) {
  std::string_view s = kernel_text;
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

}  // namespace

namespace {

// A trigger as the kernel lists it, as it is written to set it again:
// "traceon:count=5 if a == 1" -> "traceon:5 if a == 1", ":unlimited" dropped.
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

// What removes a trigger written as `text`: "!" and its command and target,
// without count or filter.
std::string removal_of(const std::string& text) {
  std::string undo = text.substr(0, text.find(" if "));
  auto colon = undo.rfind(':');
  if (colon != std::string::npos && undo.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    undo.erase(colon);
  return "!" + undo;
}

}  // namespace

std::string Controller::duplicate_of(const Plan& plan, std::size_t index, const Stable* names) const {
  const KernelWrite& w = plan.writes[index];
  const std::string kind = trigger_kind(w.text);
  if (kind.empty()) return {};
  // The write's own earlier commands: the last one of this kind decides.
  for (std::size_t j = index; j-- > 0;) {
    const KernelWrite& o = plan.writes[j];
    if (o.dir != w.dir || trigger_kind(o.text) != kind) continue;
    if (o.remove) return {};
    return o.text;
  }
  auto k = files_.read(w.dir + "/trigger");
  if (!k) return {};
  for (const auto& line : lines_of(*k)) {
    if (line[0] == '#' || trigger_kind(line) != kind) continue;
    if (!names) return line;
    std::lock_guard lock(state_mu_);
    return translate_trigger_line(names, w.dir, line);
  }
  return {};
}

int Controller::apply_triggers(const std::string& where, const Plan& plan, std::string_view text, const Stable* names) {
  const auto& writes = plan.writes;
  // A duplicate is known before anything is armed: refuse it then. (Armed
  // triggers fire while the write goes on, and a refusal later has effects
  // of theirs to undo.)
  for (std::size_t i = 0; i < writes.size(); ++i)
    if (!writes[i].remove)
      if (std::string d = duplicate_of(plan, i, names); !d.empty())
        return refuse(where, EEXIST,
                      fmt::format("File exists: '{}' is set already (one trigger of its kind per event{})", d,
                                  writes[i].target_dir.empty() ? "" : " and target"),
                      text, plan.commands[writes[i].command].command_pos);
  // What a trigger that fires meanwhile changes: its target's enable, and
  // tracing on or off. Put back as it was if the kernel refuses a later write.
  std::vector<std::pair<std::string, std::string>> before;
  std::set<std::string> seen;
  for (const auto& w : writes)
    if (!w.target_dir.empty() && seen.insert(w.target_dir).second) {
      if (auto k = files_.read(w.target_dir + "/enable")) before.emplace_back(w.target_dir + "/enable", std::move(*k));
    }
  if (auto k = files_.read("tracing_on")) before.emplace_back("tracing_on", std::move(*k));
  // What each applied write undoes with: a removal puts back what it removed.
  std::vector<std::string> undo(writes.size());
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const KernelWrite& w = writes[i];
    if (w.remove) {
      const std::string kind = trigger_kind(w.text);
      auto now = kind.empty() ? Result<std::string>(std::string()) : files_.read(w.dir + "/trigger");
      for (const auto& line : lines_of(now ? *now : std::string()))
        if (line[0] != '#' && trigger_kind(line) == kind) {
          undo[i] = input_form(line);
          break;
        }
    } else {
      undo[i] = removal_of(w.text);
    }
    KernelStatus written = kernel_write(w.dir + "/trigger", w.text);
    if (written) continue;
    // A refused write changes nothing: undo the rest, newest first.
    for (std::size_t j = i; j-- > 0;)
      if (!undo[j].empty()) put_back(writes[j].dir + "/trigger", undo[j]);
    for (const auto& [file, was] : before) {
      // "1*" and "0*" are the soft mode another trigger holds: writing the
      // digit sets or clears its soft-disable as the plain state is set.
      auto now = files_.read(file);
      if (now && !now->empty() && !was.empty() && (*now)[0] != was[0])
        put_back(file, std::string(1, was[0]));
    }
    const Plan::Command& c = plan.commands[w.command];
    const KernelRefusal& why = written.error();
    if (!why.logged) return refuse(where, why.code, why.reason, text, c.command_pos);
    return kernel_refused(where, why, text, c.has_filter ? &c.filter : nullptr, c.filter_pos);
  }
  return 0;
}

int Controller::write_trigger(std::size_t index, std::string_view data) {
  const Stable& s = stable_.at(index);
  return write_triggers(s.name + "/trigger", s.event, &s, data);
}

int Controller::write_raw_trigger(const std::string& system, const std::string& event, std::string_view data) {
  return write_triggers(fmt::format("raw/{}/{}/trigger", system, event), EventName{system, event}, nullptr, data);
}

int Controller::write_triggers(const std::string& where, const EventName& ev, const Stable* s, std::string_view data) {
  std::shared_lock values(variables_mu_);
  if (int e = check_size(where, data)) return e;
  std::string text = shown(data);
  auto parsed = parse_triggers(data, s ? TargetStyle::Stable : TargetStyle::Raw);
  if (!parsed) return refuse(where, EINVAL, planner_.with_available(parsed.error().message), text, parsed.error().pos);
  const std::vector<TriggerCommand>& commands = *parsed;
  const std::string dir = ev.dir();
  Result<Plan, Refusal> planned = planner_.plan(ev, s, commands, planning_state());
  if (!planned) return refuse(where, planned.error().code, planned.error().reason, text, planned.error().caret);
  const Plan& plan = *planned;
  if (int e = check_variable_uses(where, dir, plan)) return e;
  auto locks = write_locks(plan.dirs);
  PublishOnExit publish{*this};
  std::vector<int> armed;
  if (int e = arm_saves(where, plan, text, armed)) return e;
  if (int e = apply_triggers(where, plan, text, s)) {
    for (int id : armed) captures_->disarm(id);
    return e;
  }
  finish_saves(ev, s, plan, armed);
  std::lock_guard lock(state_mu_);
  for (const auto& r : plan.records) {
    drop_use(dir, r.identity);
    if (!r.remove && !r.variables.empty()) note_use({ev, r.identity, r.stable_filter, s, r.variables, r.raw_filter});
    if (!s) continue;  // (raw/ reads the kernel's own words back)
    if (r.remove) {
      for (auto it = applied_.begin(); it != applied_.end();)
        it = (std::get<0>(it->first) == dir && std::get<1>(it->first) == r.identity) ? applied_.erase(it) : std::next(it);
    } else {
      applied_[{dir, r.identity, r.raw_filter}] = {r.stable_target, r.stable_filter,
                                                   static_cast<std::size_t>(s - stable_.data())};
    }
  }
  return 0;
}

std::string Controller::translate_trigger_line(const Stable* s, const std::string& dir, const std::string& line) const {
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
  auto it = applied_.find({dir, identity, has_filter ? raw_filter : ""});
  if (it != applied_.end() && s && it->second.writer == static_cast<std::size_t>(s - stable_.data())) {
    target = it->second.stable_target;
    filter = it->second.stable_filter;
  } else {
    for (const auto& other : stable_)
      if (other.binding->raw.system + ":" + other.binding->raw.name == ktarget) {
        target = other.name;
        break;
      }
    if (s) filter = rename_filter_fields(raw_filter, s->raw_to_stable);
  }
  std::string out = cmd + (target.empty() ? "" : ":" + target) + rest;
  if (has_filter) out += " if " + filter;
  return out;
}

int Controller::read_trigger(std::size_t index, std::string& out) {
  const Stable& s = stable_.at(index);
  auto event = read_lock(s.dir);
  auto kernel = files_.read(s.dir + "/trigger");
  if (!kernel) return kernel.code();
  const std::string& k = *kernel;
  std::lock_guard lock(state_mu_);
  const std::string saves = save_lines(s.dir);
  if (k.rfind("#", 0) == 0) {  // no triggers: the kernel's header, as it is
    out = saves.empty() ? k : saves;
    return 0;
  }
  out.clear();
  for (const auto& line : lines_of(k)) out += translate_trigger_line(&s, s.dir, line) + "\n";
  out += saves;
  return 0;
}

int Controller::read_raw(const std::string& system, const std::string& event, const std::string& file,
                         std::string& out) {
  const std::string dir = EventName{system, event}.dir();
  auto lock = read_lock(dir);
  auto k = files_.read(dir + "/" + file);
  if (!k) return k.code();
  out = file == "filter" || file == "trigger" ? raw_with_names(dir, file, *k) : std::move(*k);
  return 0;
}

// ---- variables

namespace {

// A kernel trigger line's command and target: "enable_event:sched:sched_switch",
// "traceon".
std::string line_identity(const std::string& line) {
  std::string head = line.substr(0, line.find(" if "));
  const std::vector<std::string> parts = colon_parts(head);
  if ((parts[0] == "enable_event" || parts[0] == "disable_event") && parts.size() >= 3)
    return parts[0] + ":" + parts[1] + ":" + parts[2];
  return parts[0];
}

}  // namespace

VariableValues Controller::variables_now() const {
  std::lock_guard lock(state_mu_);
  return variables_;
}

FilterResult Controller::condition_to_raw(const std::string& text, const Stable* names,
                                          const std::set<std::string>& declared) const {
  return condition_in_kernel_names(text, names, variables_now(), declared);
}

PlanningState Controller::planning_state() const {
  std::lock_guard lock(state_mu_);
  PlanningState state;
  state.variables = variables_;
  for (const auto& a : saves_) state.saves.emplace(a.event.dir(), a.variable);
  return state;
}

void Controller::note_use(VarUse use) { var_uses_.push_back(std::move(use)); }

int Controller::check_variable_uses(const std::string& where, const std::string& dir,
                                    const std::set<std::string>& replaced, std::size_t adding, std::string_view text) {
  if (adding == 0) return 0;
  std::size_t kept = 0;
  {
    std::lock_guard lock(state_mu_);
    for (const auto& u : var_uses_) kept += !(u.event.dir() == dir && replaced.count(u.identity));
  }
  if (kept + adding <= kMaxVariableUses) return 0;
  return refuse(where, ENOSPC,
                fmt::format("Too many conditions naming variables (the limit is {}: a change of value rewrites "
                            "each of them in the kernel)",
                            kMaxVariableUses),
                text, 0);
}

int Controller::check_variable_uses(const std::string& where, const std::string& dir, const Plan& plan) {
  std::set<std::string> replaced;
  std::size_t adding = 0;
  for (const auto& r : plan.records) {
    replaced.insert(r.identity);
    adding += !r.remove && !r.variables.empty();
  }
  return check_variable_uses(where, dir, replaced, adding, "");
}

void Controller::drop_use(const std::string& dir, const std::string& identity) {
  std::erase_if(var_uses_, [&](const VarUse& u) { return u.event.dir() == dir && u.identity == identity; });
}

int Controller::arm_saves(const std::string& where, const Plan& plan, std::string_view text, std::vector<int>& armed) {
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

void Controller::finish_saves(const EventName& ev, const Stable* s, const Plan& plan, const std::vector<int>& armed) {
  std::vector<int> gone;
  {
    std::lock_guard lock(state_mu_);
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
      saves_.push_back({ev, sv.variable, sv.field, sv.condition, s, sv.variables, armed[k++], sv.spec.count.has_value()});
      variables_.try_emplace(sv.variable);  // unset until the first capture
    }
  }
  for (int id : gone) captures_->disarm(id);
}

std::string Controller::save_lines(const std::string& dir) const {
  std::string out;
  for (const auto& sv : saves_) {
    if (sv.event.dir() != dir) continue;
    std::string count = "unlimited";
    if (sv.counted) count = fmt::format("count={}", captures_ ? captures_->remaining(sv.id).value_or(0) : 0);
    out += fmt::format("save:{}={}:{}{}\n", sv.variable, sv.field, count,
                       sv.condition.empty() ? "" : " if " + sv.condition);
  }
  return out;
}

std::string Controller::raw_with_names(const std::string& dir, const std::string& file, const std::string& kernel) const {
  std::lock_guard lock(state_mu_);
  if (file == "filter") {
    const std::string raw = trimmed(kernel);
    for (const auto& u : var_uses_)
      if (u.event.dir() == dir && u.identity.empty() && u.raw == raw) return u.text + "\n";
    return kernel;
  }
  const std::string saves = save_lines(dir);
  if (kernel.rfind("#", 0) == 0) return saves.empty() ? kernel : saves;
  std::string out;
  for (const auto& line : lines_of(kernel)) {
    std::string shown_line = line;
    if (auto at = line.find(" if "); at != std::string::npos) {
      const std::string filter = line.substr(at + 4), id = line_identity(line);
      for (const auto& u : var_uses_)
        if (u.event.dir() == dir && u.identity == id && u.raw == filter) {
          shown_line = line.substr(0, at + 4) + u.text;
          break;
        }
    }
    out += shown_line + "\n";
  }
  return out + saves;
}

KernelStatus Controller::rewrite_trigger(const std::string& dir, const std::string& identity, const std::string& from,
                                         const std::string& to) {
  auto k = files_.read(dir + "/trigger");
  if (!k) return KernelRefusal::of(k.code());
  for (const auto& line : lines_of(*k)) {
    if (line[0] == '#' || line_identity(line) != identity) continue;
    auto at = line.find(" if ");
    if (at == std::string::npos || line.substr(at + 4) != from) continue;
    const std::string was = input_form(line);
    const std::string head = was.substr(0, was.find(" if "));
    if (KernelStatus removed = kernel_write(dir + "/trigger", removal_of(was), false); !removed) return removed;
    KernelStatus written = kernel_write(dir + "/trigger", head + " if " + to);
    if (!written) put_back(dir + "/trigger", was);
    return written;
  }
  return KernelRefusal::of(ENOENT);  // removed behind eventfs's back (through the instance itself)
}

std::string Controller::reapply(const std::set<std::string>& changed, const std::function<bool()>& stopping) {
  auto touches = [&](const std::set<std::string>& names) {
    return std::any_of(changed.begin(), changed.end(), [&](const std::string& n) { return names.count(n) > 0; });
  };
  std::lock_guard rewriting(rewrite_mu_);
  std::vector<std::pair<std::string, std::string>> uses;  // (dir, identity)
  std::vector<int> saves;
  {
    std::lock_guard lock(state_mu_);
    for (const auto& u : var_uses_)
      if (touches(u.variables)) uses.emplace_back(u.event.dir(), u.identity);
    for (const auto& sv : saves_)
      if (touches(sv.variables)) saves.push_back(sv.id);
  }
  std::string first_error;
  for (const auto& [dir, identity] : uses) {
    if (stopping && stopping()) return first_error;
    auto locks = write_locks({dir});
    // The use as it is now: a write to the event may have changed or
    // removed it since, translated with the values of its own moment.
    std::optional<VarUse> now;
    {
      std::lock_guard lock(state_mu_);
      for (const auto& u : var_uses_)
        if (u.event.dir() == dir && u.identity == identity) now = u;
    }
    if (!now) continue;
    const VarUse& u = *now;
    auto translated = condition_to_raw(u.text, u.names);
    if (!translated || translated->raw == u.raw) continue;
    const TranslatedFilter& tf = *translated;
    KernelStatus set = u.identity.empty() ? replace_filter(u.event.dir(), tf.raw) : rewrite_trigger(u.event.dir(), u.identity, u.raw, tf.raw);
    if (!set) {
      if (first_error.empty()) first_error = set.reason();
      continue;
    }
    std::lock_guard lock(state_mu_);
    for (auto& v : var_uses_)
      if (v.event.dir() == u.event.dir() && v.identity == u.identity && v.raw == u.raw) v.raw = tf.raw;
    if (u.identity.empty()) {
      if (auto f = filters_.find(u.event.dir()); f != filters_.end() && f->second.raw == u.raw) f->second.raw = tf.raw;
    } else if (auto it = applied_.find({u.event.dir(), u.identity, u.raw}); it != applied_.end()) {
      Applied a = it->second;
      applied_.erase(it);
      applied_[{u.event.dir(), u.identity, tf.raw}] = a;
    }
  }
  for (int id : saves) {
    if (stopping && stopping()) return first_error;
    std::optional<ArmedSave> sv;
    {
      std::lock_guard lock(state_mu_);
      for (const auto& a : saves_)
        if (a.id == id) sv = a;
    }
    if (!sv || !captures_) continue;
    auto translated = condition_to_raw(sv->condition, sv->names);
    if (!translated) continue;
    if (Status set = captures_->refilter(id, translated->raw); !set && first_error.empty()) first_error = set.reason();
  }
  return first_error;
}

void Controller::captured(const std::vector<Captured>& batch, const std::function<bool()>& stopping) {
  std::set<std::string> changed;
  std::string values;
  {
    std::unique_lock one(variables_mu_);
    std::lock_guard lock(state_mu_);
    for (const auto& c : batch) {
      auto it = variables_.find(c.variable);
      if (it == variables_.end() || it->second == c.value) continue;
      it->second = c.value;
      changed.insert(c.variable);
      values += fmt::format("{}{}={}", values.empty() ? "" : " ", c.variable, c.value);
    }
  }
  if (changed.empty()) return;
  if (std::string e = reapply(changed, stopping); !e.empty())
    log_.add_failure("variables", fmt::format("{} (captured): {}", values, e));
}

int Controller::read_variables(std::string& out) {
  std::lock_guard lock(state_mu_);
  out = variables_text(variables_);
  return 0;
}

int Controller::write_variables(std::string_view data) {
  const std::string where = "variables";
  if (int e = check_size(where, data)) return e;
  const std::string text = shown(data);
  auto parsed = parse_variable_changes(data, reserved_names_);
  if (!parsed) return refuse(where, EINVAL, parsed.error().message, text, parsed.error().pos);
  const std::vector<VariableChange>& changes = *parsed;
  std::unique_lock one(variables_mu_);
  VariableValues before = variables_now(), after = before;
  for (const auto& c : changes) {
    if (c.kind == VariableChange::Kind::Set) {
      after[c.name] = c.value;
    } else if (c.kind == VariableChange::Kind::Declare) {
      after[c.name] = std::nullopt;
    } else {
      if (!after.count(c.name)) return refuse(where, ENOENT, fmt::format("No variable '{}'", c.name), text, c.pos);
      std::string user;
      {
        std::lock_guard lock(state_mu_);
        for (const auto& u : var_uses_)
          if (u.variables.count(c.name)) user = u.event.shown() + "/" + (u.identity.empty() ? "filter" : "trigger");
        for (const auto& sv : saves_)
          if (sv.variable == c.name || sv.variables.count(c.name)) user = sv.event.shown() + "/trigger";
      }
      if (!user.empty())
        return refuse(where, EBUSY, fmt::format("'{}' is in use ({}): remove that first", c.name, user),
                      text, c.pos);
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
  {
    std::lock_guard lock(state_mu_);
    variables_ = after;
  }
  one.unlock();  // the rewrites go event by event, without holding up writes to other events
  if (std::string e = reapply(changed); !e.empty()) {
    one.lock();
    {
      std::lock_guard lock(state_mu_);
      for (const auto& name : changed)  // (what a capture changed meanwhile stays)
        if (auto was = before.find(name); was != before.end() && variables_.count(name) && variables_[name] == after[name])
          variables_[name] = was->second;
    }
    one.unlock();
    reapply(changed);
    return refuse(where, EINVAL, "the kernel refused a condition with the new value: " + e, text, 0);
  }
  return 0;
}

}  // namespace eventfs
