// The notifier threads of the stream hub, one per CPU, and the listeners
// they call. A CPU's drainer asks its notifier to tell that CPU's readers
// (request(), never waiting); the notifier then calls the listeners, which
// do the waiting readers' work: take their records (for trace_pipe, merging
// and rendering every CPU's under all the queues' locks) and send the
// replies. A drainer that did this itself would not be reading its ring
// meanwhile, and the ring would overrun. A notifier runs where its drainer
// does, at the same nice value: it takes records with the queue held, and
// preempted there by the CPU's writer it would keep the drainer, its
// staging queue full, waiting for the queue.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "stream/hub_services.h"

namespace eventfs {

class CpuNotifiers {
 public:
  // A notifier thread asks `hub` to place it (at its start), and says when
  // it wakes (each time, before the listeners).
  CpuNotifiers(int cpus, HubServices& hub);
  ~CpuNotifiers() { stop(); }

  // Before start(): called (from CPU `cpu`'s notifier thread, or the caller
  // of notify()) for every CPU's news (cpu < 0) or only for CPU `cpu`'s.
  void add(std::function<void()> listener, int cpu) { listeners_.push_back({cpu, std::move(listener)}); }
  // Starts CPU `cpu`'s thread.
  void start(int cpu);
  // Has CPU `cpu`'s notifier call its listeners; never waits for it.
  void request(int cpu);
  // Calls the listeners of CPU `cpu` (cpu < 0: every listener) on the
  // calling thread, which holds no hub lock.
  void notify(int cpu);
  // The threads tell what was requested before, then end.
  void stop();

 private:
  void loop(int cpu);
  // A CPU's requests. `mu` is only ever held for a moment, never while
  // listeners run.
  struct Slot {
    std::mutex mu;
    std::condition_variable cv;
    bool pending = false, stopping = false;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::pair<int, std::function<void()>>> listeners_;  // CPU (or -1), listener
  HubServices& hub_;
  std::vector<std::thread> threads_;
};

}  // namespace eventfs
