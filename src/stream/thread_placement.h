// Where the stream threads run and at what priority: each CPU's drainer
// and notifier on that CPU (pin_to_cpu) at the ring readers' priority
// (ThreadPriority: nice, SCHED_FIFO), and a read of a CPU's kernel clock
// made on the CPU it belongs to (on_cpu).
#pragma once

#include <sched.h>

#include <mutex>
#include <optional>

namespace eventfs {

// Moves the calling thread to CPU `cpu` when the daemon may use that CPU (a
// CPU kept out of its affinity, as isolated ones are, is left alone; so is
// an offline one, until it comes online: the kernel leaves offline CPUs out
// of the affinity it reports). A ring's reader runs where the writer of its
// records does: floating, two drainers woken at once can be put on the same
// CPU and take turns there while the other CPU's writer overruns its ring.
// True once the thread is on its CPU. False while the CPU is offline, or
// not yet back in the thread's affinity after coming online: the kernel
// adds it back a moment later (cpusets), so callers try again at later
// turns rather than once.
bool pin_to_cpu(int cpu);

// The priority the ring readers run at: SCHED_FIFO at a priority, else a
// nice value, else the daemon's own. Set before the threads start; each
// thread applies it to itself. A refusal is said once on stderr (the
// thread then runs at the nice value, or as it was).
class ThreadPriority {
 public:
  void set_nice(int nice) { nice_ = nice; }
  void set_fifo(int priority) { fifo_ = priority; }
  void apply();

 private:
  std::optional<int> nice_;  // unset: the daemon's
  std::optional<int> fifo_;  // set: SCHED_FIFO at that priority instead
  std::once_flag nice_warning_, fifo_warning_;
};

// The calling thread on CPU `cpu` for the life of this object (where it may
// run there), then back on the CPUs it had.
class CpuVisit {
 public:
  explicit CpuVisit(int cpu);
  ~CpuVisit();
  CpuVisit(const CpuVisit&) = delete;
  CpuVisit& operator=(const CpuVisit&) = delete;

 private:
  cpu_set_t was_;
  bool moved_ = false;
};

// Runs `f` on CPU `cpu` where this thread may run there, else where the
// thread is; what `f` returns.
template <typename F>
auto on_cpu(int cpu, F f) {
  CpuVisit visit(cpu);
  return f();
}

}  // namespace eventfs
