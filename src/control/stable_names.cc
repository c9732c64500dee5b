#include "control/stable_names.h"

namespace eventfs {

StableNames stable_names_of(const Binding& b) {
  StableNames s;
  s.binding = &b;
  s.name = b.event->name;
  s.event = {b.raw.system, b.raw.name};
  s.dir = s.event.dir();
  for (const auto& f : b.fields) {
    FilterField ff;
    ff.raw_name = f.raw.name;
    ff.task_state = f.conversion == Conversion::TaskState;
    ff.states = f.states;
    s.fields.emplace(f.stable->decl.name, std::move(ff));
    if (f.conversion != Conversion::TaskState) s.raw_to_stable.emplace(f.raw.name, f.stable->decl.name);
  }
  return s;
}

}  // namespace eventfs
