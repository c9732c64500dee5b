// The record path from the kernel rings to the stream files: while (and
// only while) some stream is open, one drainer thread per CPU reads that
// CPU's ring of eventfs's instance, projects each record into its stable
// event(s) and queues it for the CPU (one thread for all rings could never
// have more than its fair share of one CPU, whatever the number of CPUs
// writing; a control thread opens and closes the rings), and a notifier
// thread per CPU tells that CPU's readers. trace_pipe takes from all queues
// in time order, as text; per_cpu/cpuN/trace_pipe_raw takes CPU N's queue in
// the binary framing. Like tracefs's own pipes, what one reader takes is
// gone for the others.
// The hub wires the parts, each in its own file: the session of open rings
// and its control thread (RingSession), a drainer's loop (CpuDrainer) and
// its timing (DrainPolicy), the notifier threads (CpuNotifiers), the merged
// text stream (TextMerge), the channels the stream files read
// (hub_channels.h) and per_cpu/cpuN/stats (cpu_stats.h). They share each
// CPU's state (hub_cpu.h) and ask the hub for what they need through one
// interface (hub_services.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "error/result.h"
#include "fs/stream_file.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "projection/wanted_events.h"
#include "ring/ring.h"
#include "stream/cpu_drainer.h"
#include "stream/cpu_notifiers.h"
#include "stream/drain_policy.h"
#include "stream/hub_cpu.h"
#include "stream/hub_services.h"
#include "stream/ring_session.h"
#include "stream/text_merge.h"
#include "stream/thread_placement.h"

namespace eventfs {

class StreamHub final : private HubServices {
 public:
  static constexpr std::size_t kQueueBytes = 8u << 20;  // per CPU, by default (-o queue_kb)
  static constexpr int kSubbufKb = 64;                  // eventfs's instance's sub-buffer size
  static constexpr std::size_t kStagingBytes = 1u << 20;     // per CPU (at most the queue's), used while a reader holds the queue

  // `files`: those of the tracefs instance whose rings are read; `cpus`: how
  // many; `resolution` must outlive the hub. `queue_bytes`: each CPU's queue.
  // `wanted` (optional; all are wanted without it) says which stable events
  // the streams carry; it must outlive the hub.
  StreamHub(RingFiles files, int cpus, const Resolution& resolution, ReaderMode mode,
            std::size_t queue_bytes = kQueueBytes, const WantedEvents* wanted = nullptr);
  ~StreamHub();

  int cpus() const { return static_cast<int>(cpu_.size()); }
  std::shared_ptr<StreamChannel> text_channel();
  std::shared_ptr<StreamChannel> cpu_channel(int cpu);
  // Called (without hub locks held, from CPU `cpu`'s notifier thread or
  // the control thread) whenever new records are queued, or the rings'
  // error changes: for every CPU's records (cpu < 0, as the merged text
  // stream wants), or only for CPU `cpu`'s (telling every CPU's streams
  // would take their locks, and wait on the other CPU's, in this CPU's turn).
  void on_data(std::function<void()> listener, int cpu = -1) { notifiers_.add(std::move(listener), cpu); }
  // Called with a one-line reason when the rings cannot be opened (once per
  // distinct reason; the streams' readers then get EIO), and when reading
  // an open CPU's ring fails (once per CPU, error and session; the ring is
  // tried again at each turn, the other CPUs' records go on coming).
  void on_ring_error(std::function<void(const std::string&)> report) { report_error_ = std::move(report); }
  // How the hub opens a CPU's ring (before start(); tests give rings of
  // their own): by default open_cpu_ring() of the instance, in the hub's mode.
  using RingOpener = RingSession::RingOpener;
  void set_ring_opener(RingOpener open) { session_.set_ring_opener(std::move(open)); }
  // How the hub opens, with the rings, the descriptor that polls readable
  // once any CPU's ring holds a record (the hub closes it with the rings):
  // by default open_any_cpu_readiness() of the instance. -1: there is none,
  // and idle rings are looked at every DrainPolicy::kIdlePollMs (but a
  // CPU's with no ring yet every DrainPolicy::kIdleWaitMs).
  using ReadinessOpener = RingSession::ReadinessOpener;
  void set_readiness_opener(ReadinessOpener open) { session_.set_readiness_opener(std::move(open)); }
  // per_cpu/cpuN/stats
  std::string stats_text(int cpu);

  // The nice value of the threads that read the rings, and of their
  // notifiers (before start()).
  // They run only while records come, in proportion to them; in a storm
  // that keeps every CPU busy, a drainer at the daemon's own priority waits
  // for the other tasks' slices, long enough at times for the ring to
  // overrun.
  void set_drainer_nice(int nice) { priority_.set_nice(nice); }
  // Or SCHED_FIFO at `priority` (1-99) for them (before start()): a woken
  // ring thread then runs at once. At a nice value, the scheduler (EEVDF)
  // lets the running writer finish its slice first, which in a storm can be
  // a good part of the time the ring takes to fill from its wake-up mark.
  void set_drainer_fifo(int priority) { priority_.set_fifo(priority); }
  void start();
  // Stops the threads and closes the rings (before the instance goes).
  void stop();

 private:
  void drain_loop(int cpu);  // reads one CPU's ring while they are open
  // HubServices, for the hub's parts:
  void place_thread(int cpu) override;
  void notifier_woken(int cpu) override;
  // (Only while a reader waits: HubCpu::readers_waiting. The drainer
  // published what it tells of before, under the CPU's queue lock, which a
  // reader takes to look after counting itself: one of the two sees the
  // other.)
  void tell(int cpu) override {
    if (cpu_[static_cast<std::size_t>(cpu)]->readers_waiting.load() > 0) notifiers_.request(cpu);
  }
  void tell_all() override { notifiers_.notify(-1); }
  void report(const std::string& line) override;  // stderr and on_ring_error()
  std::string saved_cmdlines() override { return files_.saved_cmdlines(); }

  const RingFiles files_;
  const WantedEvents* wanted_;
  ProjectionTable table_;
  // The most queue bytes one raw record can make: the records of every
  // stable event over one raw event, and a lost-events record (for the
  // drainer's staging batches, so that nothing staged is dropped).
  std::size_t max_entry_ = 0;
  HubCpus cpu_;  // (before the parts that use it, which go first)
  std::function<void(const std::string&)> report_error_;
  CpuNotifiers notifiers_;
  RingSession session_;
  TextMerge merge_;
  bool started_ = false;
  std::vector<std::thread> drainers_;  // one per CPU
  ThreadPriority priority_;  // the drainers' and notifiers'
};

}  // namespace eventfs
