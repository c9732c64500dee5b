// A stable event as the control files see it: its binding, the raw event it
// is recorded as, and the names a condition written in its file may use.
#pragma once

#include <map>
#include <string>

#include "control/event_name.h"
#include "control/filter.h"
#include "projection/binding.h"

namespace eventfs {

struct StableNames {
  const Binding* binding = nullptr;
  std::string name;
  EventName event;  // its raw event
  std::string dir;  // event.dir()
  FilterFieldMap fields;  // stable field name -> raw (for conditions)
  std::map<std::string, std::string> raw_to_stable;  // (for read-back)
  bool always_on = false;  // the kernel records it unconditionally (ftrace:print has no enable)
};

// The stable event of `b` (which must outlive it); always_on is the
// instance's to tell (left false).
StableNames stable_names_of(const Binding& b);

}  // namespace eventfs
