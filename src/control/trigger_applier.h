// Applying a planned write to the instance's trigger files, all or nothing:
// a duplicate the kernel would refuse is refused before anything is armed;
// on a kernel refusal, what the write applied is undone newest first and the
// events its triggers may have switched (and tracing_on) are put back.
// The caller holds the locks of every event the plan may change.
#pragma once

#include <functional>
#include <string>

#include "control/kernel_writer.h"
#include "control/refusal.h"
#include "control/trigger_planner.h"
#include "error/result.h"
#include "tracefs/instance.h"

namespace eventfs {

class TriggerApplier {
 public:
  // A kernel trigger line of event `dir` in the names the write's user reads
  // back (for the message of a duplicate).
  using ShownAs = std::function<std::string(const std::string& dir, const std::string& line)>;

  TriggerApplier(const InstanceFiles& files, KernelWriter& kernel) : files_(files), kernel_(kernel) {}

  // The refusal's caret points into the write the plan was made from.
  Result<void, Refusal> apply(const TriggerPlan& plan, const ShownAs& shown_as) const;

  // Puts the condition `from` (raw) of the trigger `identity`
  // (line_identity()) of `dir` as `to`, keeping its count.
  KernelStatus rewrite_condition(const std::string& dir, const std::string& identity, const std::string& from,
                                 const std::string& to) const;

 private:
  // The trigger the kernel would refuse writes[index] as a duplicate of: one
  // of the same kind (and target) already on the event and not removed
  // earlier in the write, or added earlier in it. Empty if none.
  std::string duplicate_of(const TriggerPlan& plan, std::size_t index, const ShownAs& shown_as) const;

  const InstanceFiles& files_;
  KernelWriter& kernel_;
};

}  // namespace eventfs
