// A stable event as the control files see it: its binding, the raw event it
// is recorded as, and the names a condition written in its file may use.
#pragma once

#include <cstddef>
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
  std::size_t index = 0;  // its place among the stable events (the controller's to set)
};

// Whose names the text of a control write, or of its read-back, is in: a
// stable event's (its files at the mount's root) or the kernel's own (the
// files under raw/).
class Names {
 public:
  static Names kernel() { return Names(nullptr); }
  static Names of(const StableNames& s) { return Names(&s); }

  bool is_kernel() const { return stable_ == nullptr; }
  // The stable event's names; only when !is_kernel().
  const StableNames& stable() const { return *stable_; }
  // The fields a condition may name: nullptr for the kernel's (any field of
  // the raw event's format).
  const FilterFieldMap* fields() const { return stable_ ? &stable_->fields : nullptr; }

 private:
  explicit Names(const StableNames* s) : stable_(s) {}
  const StableNames* stable_;
};

// The stable event of `b` (which must outlive it); always_on is the
// instance's to tell (left false).
StableNames stable_names_of(const Binding& b);

}  // namespace eventfs
