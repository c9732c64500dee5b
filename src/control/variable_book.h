// The variables' book (eventfs(5), "Variables"): their values, and what
// names them: the filter and trigger conditions eventfs keeps in step with
// the values (a use), and the armed save: triggers (a save). The controller
// reads it to plan and to rewrite, and records in it what its writes did.
//
// Its lock is never held across a kernel call; the save lines ask the
// capture engine for a count under it.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/captures.h"
#include "control/event_name.h"
#include "control/stable_names.h"
#include "control/trigger_planner.h"
#include "control/variables.h"

namespace eventfs {

// A filter or trigger condition that names variables, kept in step with them.
struct VariableUse {
  EventName event;
  std::string identity;  // "" for the event's filter, else the trigger's line_identity()
  std::string text;      // the condition as written
  Names names;           // whose names `text` is in
  std::set<std::string> variables;
  std::string raw;  // what the kernel has
};

// An armed save: trigger (eventfs's own, carried out by the capture engine).
struct ArmedSave {
  EventName event;
  std::string variable, field, condition;
  Names names;
  std::set<std::string> variables;  // that the condition names
  int id;                            // the capture engine's
  bool counted;
};

class VariableBook {
 public:
  VariableValues values() const;
  // What the trigger planner reads: the values and the armed saves.
  PlanningState planning_state() const;
  // The variables' file: "NAME=VALUE" or "NAME unset", a line each.
  std::string text() const;

  // Replaces every value (a write to `variables`).
  void set_values(VariableValues values);
  // Puts back `changed` as they were in `before` (declared, removed or
  // valued) where they are still as in `after` (what a capture changed
  // meanwhile stays; a variable that was new stays declared if a condition
  // or save names it by now).
  void restore(const std::set<std::string>& changed, const VariableValues& before, const VariableValues& after);
  // Takes a batch of captures: the names whose value changed, and
  // "NAME=VALUE ..." of them in `shown`.
  std::set<std::string> take(const std::vector<Captured>& batch, std::string& shown);

  // ---- uses
  // How many uses there would be if the uses of `dir` with the identities
  // `replaced` went and `adding` came.
  std::size_t uses_after(const std::string& dir, const std::set<std::string>& replaced, std::size_t adding) const;
  void drop_use(const std::string& dir, const std::string& identity);
  void add_use(VariableUse use);
  // The use of `dir` and `identity` as it is now.
  std::optional<VariableUse> use(const std::string& dir, const std::string& identity) const;
  // The use `from` is `to` in the kernel now.
  void use_rewritten(const std::string& dir, const std::string& identity, const std::string& from,
                     const std::string& to);
  // The uses (dir, identity) and the saves (ids) whose conditions name any of `changed`.
  std::vector<std::pair<std::string, std::string>> uses_naming(const std::set<std::string>& changed) const;
  std::vector<int> saves_naming(const std::set<std::string>& changed) const;
  // Where `name` is used ("system/event/filter" or ".../trigger"), "" if nowhere.
  std::string user_of(const std::string& name) const;

  // ---- saves
  std::optional<ArmedSave> save(int id) const;
  // Records a planned write's saves of `ev`: the new ones armed as `armed`
  // (in plan order), their variables declared; the ids of those it removed.
  std::vector<int> saves_written(const EventName& ev, Names names, const TriggerPlan& plan,
                                 const std::vector<int>& armed);
  // The save lines of `dir` as its trigger file shows them ("save:v=f:unlimited if ...");
  // `remaining(id)` is what is left of a counted save.
  std::string save_lines(const std::string& dir, const std::function<std::uint64_t(int)>& remaining) const;

  // The raw/ read-back of `dir`'s filter and trigger files from the
  // kernel's text `kernel`: a condition that names variables as written, and
  // the trigger file's saves.
  std::string raw_filter(const std::string& dir, const std::string& kernel) const;
  std::string raw_triggers(const std::string& dir, const std::string& kernel,
                           const std::function<std::uint64_t(int)>& remaining) const;

 private:
  bool named_locked(const std::string& name) const;  // by a use or a save
  std::string save_lines_locked(const std::string& dir, const std::function<std::uint64_t(int)>& remaining) const;

  mutable std::mutex mu_;  // what follows
  VariableValues values_;
  std::vector<VariableUse> uses_;
  std::vector<ArmedSave> saves_;
};

}  // namespace eventfs
