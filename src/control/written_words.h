// What eventfs wrote to the kernel for the files of stable events, kept in
// the writer's own words: a stable event's filter and trigger files read
// back as they were written (stable field names, stable targets), not as
// the kernel's translation. What the kernel has that eventfs did not write
// (or wrote for another stable event of the same raw event) reads back
// renamed field by field.
//
// Keyed by the raw event's directory; the caller holds that event's lock
// (EventLockTable), so a read-back and the write it shows do not interleave.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "control/stable_names.h"
#include "control/trigger_planner.h"

namespace eventfs {

class WrittenWords {
 public:
  // `stable`: every stable event (must outlive this).
  explicit WrittenWords(const std::vector<StableNames>& stable) : stable_(stable) {}

  // The filter `raw` of event `dir` was written by `writer` as `text`.
  void filter_written(const std::string& dir, const std::string& raw, const std::string& text,
                      std::size_t writer);
  void filter_cleared(const std::string& dir);
  // The kernel's filter `raw` (trimmed, not "none") of `s` as `s` reads it.
  std::string filter(const StableNames& s, const std::string& raw) const;

  // A planned write of `writer` to the trigger file of `dir` was applied.
  void triggers_written(const std::string& dir, const std::vector<TriggerPlan::Record>& records,
                        std::size_t writer);
  // A kernel trigger line of `s`'s raw event as `s` reads it.
  std::string trigger_line(const StableNames& s, const std::string& line) const;

  // A condition eventfs rewrote for a change of variables: the filter
  // (`identity` empty) or trigger of `dir` is `to` now where it was `from`.
  void condition_rewritten(const std::string& dir, const std::string& identity, const std::string& from,
                           const std::string& to);

 private:
  struct Trigger {
    std::string stable_target;  // empty when the trigger has none
    std::string stable_filter;
    std::size_t writer;  // the stable event whose names these are
  };
  using TriggerKey = std::tuple<std::string, std::string, std::string>;  // dir, cmd:target, raw filter
  struct Filter {
    std::string raw, stable;
    std::size_t writer;
  };

  const std::vector<StableNames>& stable_;
  mutable std::mutex mu_;  // what follows
  std::map<TriggerKey, Trigger> triggers_;
  std::map<std::string, Filter> filters_;  // by raw event dir
};

}  // namespace eventfs
