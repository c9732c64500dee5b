// The control files: enable, filter and trigger of stable and raw events,
// translated to the kernel's names and applied in eventfs's own instance.
// Every write is validated whole before anything is applied; a refused write
// changes nothing and leaves a line in error_log.
//
// Concurrency: a write holds the locks of the raw events it changes
// (EventLockTable) for its whole length; a read waits for a write to its own
// event, never for one to another event. Kernel writes take turns
// (KernelWriter). What the controller records of its writes (WrittenWords,
// VariableBook) is under leaf locks, never held across a kernel call.
//
// Its parts: TriggerPlanner plans a trigger write, TriggerApplier applies
// it; WrittenWords reads stable files back in the writer's words;
// VariableBook keeps the variables and what names them; EnableUsers counts
// the enables of a raw event; EventLockTable and KernelWriter order the
// writes. The controller takes a write's locks, calls its parts in turn and
// is the one that logs a refusal and answers its errno.
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "control/captures.h"
#include "control/enable_users.h"
#include "control/event_name.h"
#include "control/error_log.h"
#include "control/event_locks.h"
#include "control/filter.h"
#include "control/kernel_writer.h"
#include "control/refusal.h"
#include "control/stable_names.h"
#include "control/trigger.h"
#include "control/trigger_applier.h"
#include "control/trigger_planner.h"
#include "control/variable_book.h"
#include "control/variables.h"
#include "control/written_words.h"
#include "error/result.h"
#include "projection/binding.h"
#include "projection/wanted_events.h"
#include "tracefs/instance.h"
#include "tracefs/tracefs.h"

namespace eventfs {

// The event whose control files are read or written: a stable event, by its
// index in resolution.available, or a raw event of raw/.
using ControlEvent = std::variant<std::size_t, EventName>;

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

  // The control files of `event`: a stable event's at the mount's root, in
  // its names, or raw/<system>/<event>/'s in the kernel's names as they
  // are. A write of "hold" to enable puts a hold in `held` (if it has none
  // yet; without `held`, "hold" is refused).
  int read_enable(const ControlEvent& event, std::string& out);
  int write_enable(const ControlEvent& event, std::string_view data, Hold* held = nullptr);
  int read_filter(const ControlEvent& event, std::string& out);
  int write_filter(const ControlEvent& event, std::string_view data);
  int read_trigger(const ControlEvent& event, std::string& out);
  int write_trigger(const ControlEvent& event, std::string_view data);

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
  // A ControlEvent resolved: the directory error_log names a refusal's file
  // in ("sched_switch", "raw/sched/sched_switch"), its raw event, its names.
  struct Target {
    std::string where;
    EventName event;
    Names names;
  };
  Target target_of(const ControlEvent& which) const;

  // A read of an event's files waits for a write to that event (which may
  // show the kernel a state it then undoes, a refused filter say), never for
  // one to another event.
  EventLockTable::Held read_lock(const std::string& dir) { return event_locks_.for_read(dir); }
  EventLockTable::Held write_locks(std::vector<std::string> dirs) { return event_locks_.for_write(std::move(dirs)); }

  // Logs a refusal of the write to `where` (its text `command`); its errno.
  int refuse(const std::string& where, const Refusal& why, std::string_view command);
  int refuse(const std::string& where, int err, const std::string& message, std::string_view command,
             std::size_t caret) {
    return refuse(where, Refusal{err, message, caret}, command);
  }
  // Logs a kernel refusal of `command`, the caret into what the user wrote;
  // the write's errno.
  int kernel_refused(const std::string& where, const KernelRefusal& why, std::string_view command,
                     const TranslatedFilter* filter, std::size_t filter_pos);
  // 0, or EINVAL (logged) for a write of a page or more.
  int check_size(const std::string& where, std::string_view data);
  KernelStatus set_enabled(const std::string& dir, const std::string& user, bool on);
  // Enables or holds `dir` for `user` (EnableUsers' names), as
  // write_enable() was asked; the caller holds the event lock.
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
  // Writes the filter `raw` of `dir`; a refused one leaves the one before.
  KernelStatus replace_filter(const std::string& dir, const std::string& raw);
  int one_line(const std::string& where, const std::string& text);
  // 0, or ENOSPC (logged) when `adding` conditions naming variables on
  // `dir`, in place of its uses `replaced` (identities), would make more
  // than kMaxVariableUses: each is a kernel rewrite at every change. When
  // adding any, `held` holds uses_mu_ on return (the caller keeps it until
  // it has recorded its uses, or refused). Call with the event locks held.
  int check_variable_uses(const std::string& where, const std::string& dir, const std::set<std::string>& replaced,
                          std::size_t adding, std::string_view text, std::unique_lock<std::mutex>& held);
  // Arms the plan's new saves (their ids in `armed`); on a refusal none.
  int arm_saves(const std::string& where, const TriggerPlan& plan, std::string_view text, std::vector<int>& armed);
  // What is left of a counted save.
  std::uint64_t remaining(int save) const;
  // Rewrites what names any of `changed` to the values they have now, one
  // event at a time (caller holds no event lock and not variables_mu_); the
  // first refusal's message, or "". Stops early once `stopping()`.
  std::string reapply(const std::set<std::string>& changed, const std::function<bool()>& stopping = nullptr);

  const InstanceFiles& files_;
  const Tracefs& tracefs_;
  WantedEvents* wanted_;
  std::vector<StableNames> stable_;
  std::vector<std::string> available_;
  std::set<std::string> reserved_names_;  // field names of the stable events
  KernelWriter kernel_;
  EventLockTable event_locks_;
  EnableUsers enable_users_;
  std::mutex publish_mu_;  // one publish_wanted() at a time
  WrittenWords words_;     // reads stable_
  VariableBook book_;
  CaptureEngine* captures_ = nullptr;
  TriggerPlanner planner_;  // reads stable_, available_ and reserved_names_
  TriggerApplier applier_;
  // Shared by writes of filters and triggers (what they translate stays
  // current until they are recorded), whole for a change of values (not for
  // the rewrites that follow it).
  std::shared_mutex variables_mu_;
  // Held by a write that adds uses of variables from its count against
  // kMaxVariableUses to its record of them, after its event locks: two
  // writes to different events cannot both take the last place.
  std::mutex uses_mu_;
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
