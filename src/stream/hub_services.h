// What the parts of the stream hub (the drainers, the notifiers, the ring
// session, the merged text stream) ask of the hub they belong to, in one
// interface: StreamHub implements it, and a test gives a part a fake of its
// own. Each call is made without hub locks held.
#pragma once

#include <string>

namespace eventfs {

class HubServices {
 public:
  // Puts the calling thread, CPU `cpu`'s drainer or notifier, on its CPU
  // at the ring readers' priority (at each thread's start).
  virtual void place_thread(int cpu) = 0;
  // CPU `cpu`'s notifier is awake (before it calls its listeners): it moves
  // to its CPU again if its drainer asks (the CPU came back online).
  virtual void notifier_woken(int cpu) = 0;
  // Has CPU `cpu`'s notifier tell that CPU's readers, if any waits (the
  // caller published its news first); never waits for it.
  virtual void tell(int cpu) = 0;
  // Tells every stream's listeners, on the calling thread (the rings'
  // error changed).
  virtual void tell_all() = 0;
  // A one-line ring error, for stderr and the error log.
  virtual void report(const std::string& line) = 0;
  // The kernel's saved_cmdlines ("<pid> <comm>" lines; empty if unread).
  virtual std::string saved_cmdlines() = 0;

 protected:
  ~HubServices() = default;
};

}  // namespace eventfs
