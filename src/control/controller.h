// The control files: enable, filter and trigger of stable and raw events,
// translated to the kernel's names and applied in eventfs's own instance.
// Every write is validated whole before anything is applied; a refused write
// changes nothing and leaves a line in error_log.
//
// Concurrency: a write holds the locks of the raw events it changes
// (EventLockTable) for its whole length; a read waits for a write to its own
// event, never for one to another event. Kernel writes take turns
// (KernelWriter). The controller's own records are under a lock that is
// never held across a kernel call.
#pragma once

#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "control/captures.h"
#include "control/enable_users.h"
#include "control/event_name.h"
#include "control/error_log.h"
#include "control/event_locks.h"
#include "control/filter.h"
#include "control/kernel_writer.h"
#include "control/stable_names.h"
#include "control/trigger.h"
#include "control/trigger_planner.h"
#include "control/variables.h"
#include "error/result.h"
#include "projection/binding.h"
#include "projection/wanted_events.h"
#include "tracefs/instance.h"
#include "tracefs/tracefs.h"

namespace eventfs {

class Controller {
 public:
  // `files` is eventfs's instance; `tracefs` lists the kernel's raw events;
  // `resolution` the stable events. All must outlive the controller.
  // `wanted` (optional, sized like resolution.available) is kept up to date
  // with which stable events are enabled or armed.
  Controller(const InstanceFiles& files, const Tracefs& tracefs, const Resolution& resolution,
             WantedEvents* wanted = nullptr);

  // A held enable (eventfs(5), "enable"): the event it holds stays enabled
  // until the hold is destroyed, whatever other users write meanwhile. Made
  // by a write of "hold" through an open file, which keeps it until it is
  // released.
  class EnableHold;
  using Hold = std::unique_ptr<EnableHold>;

  // Stable event `index` (into resolution.available). A write of "hold"
  // puts a hold in `held` (if it has none yet; without `held`, "hold" is
  // refused).
  int read_enable(std::size_t index, std::string& out);
  int write_enable(std::size_t index, std::string_view data, Hold* held = nullptr);
  int read_filter(std::size_t index, std::string& out);
  int write_filter(std::size_t index, std::string_view data);
  int read_trigger(std::size_t index, std::string& out);
  int write_trigger(std::size_t index, std::string_view data);

  // raw/<system>/<event>/{enable,filter,trigger}: the kernel's names as they are.
  int read_raw(const std::string& system, const std::string& event, const std::string& file, std::string& out);
  int write_raw_enable(const std::string& system, const std::string& event, std::string_view data,
                       Hold* held = nullptr);
  int write_raw_filter(const std::string& system, const std::string& event, std::string_view data);
  int write_raw_trigger(const std::string& system, const std::string& event, std::string_view data);

  // The mount's `trace_clock`: the instance's, as tracefs shows it (the
  // clock of the records' time stamps, selected one in brackets).
  Result<std::string> read_trace_clock() const { return files_.read("trace_clock"); }

  // The mount's `variables` file (eventfs(5), "Variables").
  int read_variables(std::string& out);
  int write_variables(std::string_view data);
  // Where save: triggers are carried out; without one they are refused.
  // Set before the mount is served.
  void set_captures(CaptureEngine* captures) {
    captures_ = captures;
    planner_.set_can_save(captures != nullptr);
  }
  // A batch of save: triggers' captures (from the capture engine's thread):
  // the values change, then what names them is rewritten until `stopping()`.
  void captured(const std::vector<Captured>& batch, const std::function<bool()>& stopping);

  ErrorLog& error_log() { return log_; }
  // Raw events whose lock is held or waited for now (for tests: the map of
  // event locks keeps only those).
  std::size_t event_locks_in_use() const { return event_locks_.in_use(); }
  const std::vector<std::string>& available_triggers() const { return available_; }

 private:
  using Stable = StableNames;
  // What eventfs wrote, so read-back can show the user's own words.
  struct Applied {
    std::string stable_target;  // empty when the trigger has none
    std::string stable_filter;
    std::size_t writer;  // the stable event whose names these are
  };
  using AppliedKey = std::tuple<std::string, std::string, std::string>;  // dir, cmd:target, raw filter

  using KernelWrite = TriggerWrite;
  using Plan = TriggerPlan;
  // A read of an event's files waits for a write to that event (which may
  // show the kernel a state it then undoes, a refused filter say), never for
  // one to another event.
  EventLockTable::Held read_lock(const std::string& dir) { return event_locks_.for_read(dir); }
  EventLockTable::Held write_locks(std::vector<std::string> dirs) { return event_locks_.for_write(std::move(dirs)); }

  int refuse(const std::string& where, int err, const std::string& message, std::string_view command,
             std::size_t caret);
  KernelStatus kernel_write(const std::string& rel, std::string_view data, bool read_log = true) {
    return kernel_.write(rel, data, read_log);
  }
  void put_back(const std::string& rel, std::string_view data) { kernel_.put_back(rel, data); }
  // Logs a kernel refusal of `command`, the caret into what the user wrote;
  // the write's errno.
  int kernel_refused(const std::string& where, const KernelRefusal& why, std::string_view command,
                     const TranslatedFilter* filter, std::size_t filter_pos);
  // 0, or EINVAL (logged) for a write of a page or more.
  int check_size(const std::string& where, std::string_view data);
  KernelStatus set_enabled(const std::string& dir, const std::string& user, bool on);
  // Enables or holds `dir` for `user` (EnableUsers' names), as
  // write_enable() and write_raw_enable() were asked; the caller holds the
  // event lock.
  int enable_write(const std::string& where, const EventName& ev, const std::string& user, std::string_view data,
                   Hold* held);
  // Ends a hold (from its destructor).
  void end_hold(const EventName& ev, const std::string& user);
  // Recomputes `wanted_` from the users and the kernel's soft-mode marks.
  void publish_wanted();
  struct PublishOnExit {
    Controller& c;
    ~PublishOnExit() { c.publish_wanted(); }
  };
  KernelStatus replace_filter(const std::string& dir, const std::string& raw);
  int one_line(const std::string& where, const std::string& text);
  // A trigger the kernel would refuse as a duplicate: one of the same kind
  // (and target) already on the event and not removed earlier in the write,
  // or added earlier in it. Empty if none.
  std::string duplicate_of(const Plan& plan, std::size_t index, const Stable* names) const;
  // A write of the filter file of `ev` in the names of `s` (nullptr: raw/,
  // the kernel's names).
  int write_filters(const std::string& where, const EventName& ev, const Stable* s, std::string_view data);
  // A write of the trigger file of `ev` in the names of `s` (nullptr: raw/,
  // the kernel's names): planned whole, then applied all or nothing.
  int write_triggers(const std::string& where, const EventName& ev, const Stable* s, std::string_view data);
  // Applies a plan all or nothing: on a refusal, what it applied is undone
  // newest first and the events its triggers may have switched are put back.
  int apply_triggers(const std::string& where, const Plan& plan, std::string_view text, const Stable* names);
  // state_mu_ held.
  std::string translate_trigger_line(const Stable* s, const std::string& dir, const std::string& line) const;

  // ---- variables
  // A filter or trigger condition that names variables, kept in step with them.
  struct VarUse {
    EventName event;
    std::string identity;  // "" for the event's filter, else the trigger's command[:target]
    std::string text;      // the condition as written
    const Stable* names;   // its field names' event; nullptr: the kernel's names
    std::set<std::string> variables;
    std::string raw;  // what the kernel has
  };
  struct ArmedSave {
    EventName event;
    std::string variable, field, condition;
    const Stable* names;
    std::set<std::string> variables;
    int id;
    bool counted;
  };
  VariableValues variables_now() const;
  // Translates a condition in its names with the current values (and
  // `declared` as unset variables where they are not variables yet).
  FilterResult condition_to_raw(const std::string& text, const Stable* names,
                                const std::set<std::string>& declared = {}) const;
  // Rewrites what names any of `changed` to the values they have now, one
  // event at a time (caller holds no event lock and not variables_mu_); the
  // first refusal's message, or "". Stops early once `stopping()`.
  std::string reapply(const std::set<std::string>& changed, const std::function<bool()>& stopping = nullptr);
  // Records what a write left naming variables (state_mu_ held).
  void note_use(VarUse use);
  // 0, or ENOSPC (logged) when `adding` conditions naming variables on
  // `dir`, in place of its uses `replaced` (identities), would make more
  // than kMaxVariableUses: each is a kernel rewrite at every change.
  int check_variable_uses(const std::string& where, const std::string& dir, const std::set<std::string>& replaced,
                          std::size_t adding, std::string_view text);
  int check_variable_uses(const std::string& where, const std::string& dir, const Plan& plan);
  void drop_use(const std::string& dir, const std::string& identity);
  // What the trigger planner reads of the controller: the variables and armed saves now.
  PlanningState planning_state() const;
  // Arms the plan's new saves; on a refusal disarms them again.
  int arm_saves(const std::string& where, const Plan& plan, std::string_view text, std::vector<int>& armed);
  void finish_saves(const EventName& ev, const Stable* s, const Plan& plan, const std::vector<int>& armed);
  std::string save_lines(const std::string& dir) const;  // state_mu_ held
  // Puts a trigger's condition `from` (raw) as `to`, keeping its count.
  KernelStatus rewrite_trigger(const std::string& dir, const std::string& identity, const std::string& from,
                               const std::string& to);
  // Raw read-back of filter and trigger with variables' names.
  std::string raw_with_names(const std::string& dir, const std::string& file, const std::string& kernel) const;

  const InstanceFiles& files_;
  const Tracefs& tracefs_;
  WantedEvents* wanted_;
  std::vector<Stable> stable_;
  std::vector<std::string> available_;
  KernelWriter kernel_;
  EventLockTable event_locks_;
  EnableUsers enable_users_;
  std::mutex publish_mu_;  // one publish_wanted() at a time
  mutable std::mutex state_mu_;  // what follows
  std::map<AppliedKey, Applied> applied_;
  struct AppliedFilter {
    std::string raw, stable;
    std::size_t writer;  // the stable event whose names `stable` is in
  };
  std::map<std::string, AppliedFilter> filters_;  // by raw event dir
  VariableValues variables_;
  std::vector<VarUse> var_uses_;
  std::vector<ArmedSave> saves_;
  std::set<std::string> reserved_names_;  // field names of the stable events
  CaptureEngine* captures_ = nullptr;
  TriggerPlanner planner_;  // reads stable_, available_ and reserved_names_
  // Shared by writes of filters and triggers (what they translate stays
  // current until they are recorded), whole for a change of values (not for
  // the rewrites that follow it).
  std::shared_mutex variables_mu_;
  // One reapply() at a time: each rewrites to the values of its moment, so
  // a later one finds what an earlier one did and changes only the rest.
  std::mutex rewrite_mu_;
  ErrorLog log_;
};

class Controller::EnableHold {
 public:
  EnableHold(Controller& c, EventName ev, std::string user)
      : c_(c), ev_(std::move(ev)), user_(std::move(user)) {}
  ~EnableHold() { c_.end_hold(ev_, user_); }
  EnableHold(const EnableHold&) = delete;
  EnableHold& operator=(const EnableHold&) = delete;

 private:
  Controller& c_;
  EventName ev_;
  std::string user_;
};

}  // namespace eventfs
