#include "control/trigger_applier.h"

#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "control/trigger_lines.h"

namespace eventfs {

std::string TriggerApplier::duplicate_of(const TriggerPlan& plan, std::size_t index, const ShownAs& shown_as) const {
  const TriggerWrite& w = plan.writes[index];
  const std::string kind = trigger_kind(w.text);
  if (kind.empty()) return {};
  // The write's own earlier commands: the last one of this kind decides.
  for (std::size_t j = index; j-- > 0;) {
    const TriggerWrite& o = plan.writes[j];
    if (o.dir != w.dir || trigger_kind(o.text) != kind) continue;
    if (o.remove) return {};
    return o.text;
  }
  auto k = files_.read(w.dir + "/trigger");
  if (!k) return {};
  for (const auto& line : lines_of(*k))
    if (line[0] != '#' && trigger_kind(line) == kind) return shown_as(w.dir, line);
  return {};
}

Result<void, Refusal> TriggerApplier::apply(const TriggerPlan& plan, const ShownAs& shown_as) const {
  const auto& writes = plan.writes;
  // A duplicate is known before anything is armed: refuse it then. (Armed
  // triggers fire while the write goes on, and a refusal later has effects
  // of theirs to undo.)
  for (std::size_t i = 0; i < writes.size(); ++i)
    if (!writes[i].remove)
      if (std::string d = duplicate_of(plan, i, shown_as); !d.empty())
        return Refusal{EEXIST,
                       fmt::format("File exists: '{}' is set already (one trigger of its kind per event{})", d,
                                   writes[i].target_dir.empty() ? "" : " and target"),
                       plan.commands[writes[i].command].command_pos};
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
    const TriggerWrite& w = writes[i];
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
    KernelStatus written = kernel_.write(w.dir + "/trigger", w.text);
    if (written) continue;
    // A refused write changes nothing: undo the rest, newest first.
    for (std::size_t j = i; j-- > 0;)
      if (!undo[j].empty()) kernel_.put_back(writes[j].dir + "/trigger", undo[j]);
    for (const auto& [file, was] : before) {
      // "1*" and "0*" are the soft mode another trigger holds: writing the
      // digit sets or clears its soft-disable as the plain state is set.
      auto now = files_.read(file);
      if (now && !now->empty() && !was.empty() && (*now)[0] != was[0])
        kernel_.put_back(file, std::string(1, was[0]));
    }
    const TriggerPlan::Command& c = plan.commands[w.command];
    const KernelRefusal& why = written.error();
    if (!why.logged) return Refusal{why.code, why.reason, c.command_pos};
    return Refusal{why.code, why.reason, caret_in_write(why, c.has_filter ? &c.filter : nullptr, c.filter_pos)};
  }
  return {};
}

KernelStatus TriggerApplier::rewrite_condition(const std::string& dir, const std::string& identity,
                                               const std::string& from, const std::string& to) const {
  auto k = files_.read(dir + "/trigger");
  if (!k) return KernelRefusal::of(k.code());
  for (const auto& line : lines_of(*k)) {
    if (line[0] == '#' || line_identity(line) != identity) continue;
    auto at = line.find(" if ");
    if (at == std::string::npos || line.substr(at + 4) != from) continue;
    const std::string was = input_form(line);
    const std::string head = was.substr(0, was.find(" if "));
    if (KernelStatus removed = kernel_.write(dir + "/trigger", removal_of(was), false); !removed) return removed;
    KernelStatus written = kernel_.write(dir + "/trigger", head + " if " + to);
    if (!written) kernel_.put_back(dir + "/trigger", was);
    return written;
  }
  return KernelRefusal::of(ENOENT);  // removed behind eventfs's back (through the instance itself)
}

}  // namespace eventfs
