// Planning a write to a trigger file: every command of the write parsed,
// checked and translated to what the kernel is to be written, before
// anything is applied. Planning neither writes nor logs: a command that
// cannot be carried out makes the whole write's Refusal (errno, error_log
// message, caret), which the controller's write entry point logs and
// answers with.
//
// What it reads of the controller's state (variables and their values, the
// armed saves) comes in a PlanningState the caller takes at the write's
// start; what it reads of the kernel is the raw events' list and formats.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "control/captures.h"
#include "control/event_name.h"
#include "control/filter.h"
#include "control/refusal.h"
#include "control/stable_names.h"
#include "control/trigger.h"
#include "control/variables.h"
#include "error/result.h"
#include "tracefs/tracefs.h"

namespace eventfs {

// A refusal found while planning a write, before anything is applied.
using Planned = Result<void, Refusal>;

// One write to a trigger file of the instance: `dir` is the event's,
// `target_dir` the event an enable_event/disable_event names ("" if none);
// `command` indexes the plan's commands (for error positions).
struct TriggerWrite {
  std::string dir, text, target_dir;
  bool remove = false;
  std::size_t command = 0;
};

// A write's commands, translated whole before anything is applied.
struct TriggerPlan {
  struct Command {
    bool has_filter = false;
    TranslatedFilter filter;  // stable -> raw, for error positions
    std::size_t filter_pos = 0;
    std::size_t command_pos = 0;  // where the command begins in the write
  };
  // What read-back shows in the writer's own names (stable files only).
  struct Record {
    bool remove;
    std::string identity, raw_filter, stable_target, stable_filter;
    std::set<std::string> variables;  // that the condition names
  };
  // A save: command (eventfs's own; nothing in the kernel's trigger file).
  struct Save {
    bool remove = false;
    std::string variable, field;  // as written
    CaptureSpec spec;
    std::string condition;  // as written ("" for none)
    std::set<std::string> variables;  // that the condition names
    std::size_t command_pos = 0;
  };
  std::vector<Command> commands;
  std::vector<Save> saves;
  std::vector<TriggerWrite> writes;
  std::vector<std::string> dirs;  // every event the write may change
  std::vector<Record> records;
  // Variables the write's own save: commands declare: its conditions may
  // name them before the first capture (unset until then).
  std::set<std::string> declared;
};

// What planning reads of the controller's state.
struct PlanningState {
  VariableValues variables;  // every variable, with its value now
  std::set<std::pair<std::string, std::string>> saves;  // the armed saves: event dir, variable
};

// A condition in `names` in the kernel's names, with `vars`' values (and `declared` as unset variables
// where they are not variables yet). A raw condition naming no variable is
// the text as written.
FilterResult condition_in_kernel_names(const std::string& text, Names names, VariableValues vars,
                                       const std::set<std::string>& declared = {});

class TriggerPlanner {
 public:
  // `available`: the kernel's trigger commands; `stable`: every stable
  // event; `reserved`: the names a variable may not take. All must outlive
  // the planner.
  TriggerPlanner(const std::vector<std::string>& available, const std::vector<StableNames>& stable,
                 const Tracefs& tracefs, const std::set<std::string>& reserved)
      : available_(available), stable_(stable), tracefs_(tracefs), reserved_(reserved) {}

  // Whether save: commands can be carried out (there is a capture engine).
  void set_can_save(bool can) { can_save_ = can; }

  // The commands of a write to the trigger file of `ev`, in `names`.
  Result<TriggerPlan, Refusal> plan(const EventName& ev, Names names,
                                    const std::vector<TriggerCommand>& commands, const PlanningState& state) const;

  // A parse error's message, with the available commands where it is
  // about an unknown one.
  std::string with_available(const std::string& message) const;

 private:
  Planned check_command(const TriggerCommand& t) const;
  Planned plan_stable(const StableNames& s, const TriggerCommand& t, const PlanningState& state,
                      TriggerPlan& plan) const;
  Planned plan_raw(const EventName& ev, const TriggerCommand& t, const PlanningState& state,
                   TriggerPlan& plan) const;
  Planned plan_save(const TriggerCommand& t, Names names, const EventName& ev, const PlanningState& state,
                    TriggerPlan& plan) const;

  const std::vector<std::string>& available_;
  const std::vector<StableNames>& stable_;
  const Tracefs& tracefs_;
  const std::set<std::string>& reserved_;
  bool can_save_ = false;
};

}  // namespace eventfs
