// The record path from the kernel rings to the stream files: while (and
// only while) some stream is open, one drainer thread per CPU reads that
// CPU's ring of eventfs's instance, projects each record into its stable
// event(s) and queues it for the CPU (one thread for all rings could never
// have more than its fair share of one CPU, whatever the number of CPUs
// writing; a control thread opens and closes the rings), and a notifier
// thread per CPU tells that CPU's readers. trace_pipe takes
// from all queues in time order, as text; per_cpu/cpuN/trace_pipe_raw takes CPU N's queue in the binary
// framing. Like tracefs's own pipes, what one reader takes is gone for the
// others.
// The hub holds the session of open rings (control_loop()), the notifiers
// and the readers' side; a drainer's loop is CpuDrainer
// (stream/cpu_drainer.h), its timing DrainPolicy (stream/drain_policy.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "error/result.h"
#include "fs/stream_file.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "projection/text_render.h"
#include "stream/comm_cache.h"
#include "projection/wanted_events.h"
#include "ring/ring.h"
#include "stream/cpu_drainer.h"
#include "stream/drain_policy.h"
#include "stream/record_queue.h"

namespace eventfs {

class StreamHub {
 public:
  static constexpr std::size_t kQueueBytes = 8u << 20;  // per CPU, by default (-o queue_kb)
  static constexpr int kSubbufKb = 64;                  // eventfs's instance's sub-buffer size
  static constexpr std::size_t kDrainBatch = CpuDrainer::kDrainBatch;         // records taken from one ring in a turn
  static constexpr std::size_t kNotifyRecords = DrainPolicy::kNotifyRecords;  // in a storm, tell readers this often
  static constexpr std::size_t kStagingBytes = 1u << 20;     // per CPU (at most the queue's), used while a reader holds the queue
  // How often the rings are looked at (stream/drain_policy.h).
  static constexpr int kPollMs = DrainPolicy::kPollMs;
  static constexpr int kIdlePollMs = DrainPolicy::kIdlePollMs;
  static constexpr int kIdleWaitMs = DrainPolicy::kIdleWaitMs;
  static constexpr int kRestMs = DrainPolicy::kRestMs;
  static constexpr int kPinRetryMs = CpuDrainer::kPinRetryMs;  // a ring reader tries to move to its CPU this long
  // The queues' memory (the queue and staging bytes of each CPU, and their
  // records' pids and sizes) is freed this long after the last stream
  // closed, unless records wait in a queue for the next reader.
  static constexpr int kReleaseAfterMs = 3000;

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
  void on_data(std::function<void()> listener, int cpu = -1);
  // Called with a one-line reason when the rings cannot be opened (once per
  // distinct reason; the streams' readers then get EIO), and when reading
  // an open CPU's ring fails (once per CPU, error and session; the ring is
  // tried again at each turn, the other CPUs' records go on coming).
  void on_ring_error(std::function<void(const std::string&)> report);
  // How the hub opens a CPU's ring (before start(); tests give rings of
  // their own): by default open_cpu_ring() of the instance, in the hub's mode.
  using RingOpener = std::function<Result<std::unique_ptr<CpuRing>>(int cpu)>;
  void set_ring_opener(RingOpener open) { open_ring_ = std::move(open); }
  // How the hub opens, with the rings, the descriptor that polls readable
  // once any CPU's ring holds a record (the hub closes it with the rings):
  // by default open_any_cpu_readiness() of the instance. -1: there is none,
  // and idle rings are looked at every kIdlePollMs (but a CPU's with no
  // ring yet every kIdleWaitMs).
  using ReadinessOpener = std::function<int()>;
  void set_readiness_opener(ReadinessOpener open) { open_readiness_ = std::move(open); }
  // per_cpu/cpuN/stats
  std::string stats_text(int cpu);

  // The nice value of the threads that read the rings, and of their
  // notifiers (before start()).
  // They run only while records come, in proportion to them; in a storm
  // that keeps every CPU busy, a drainer at the daemon's own priority waits
  // for the other tasks' slices, long enough at times for the ring to
  // overrun.
  void set_drainer_nice(int nice) { drainer_nice_ = nice; }
  // Or SCHED_FIFO at `priority` (1-99) for them (before start()): a woken
  // ring thread then runs at once. At a nice value, the scheduler (EEVDF)
  // lets the running writer finish its slice first, which in a storm can be
  // a good part of the time the ring takes to fill from its wake-up mark.
  void set_drainer_fifo(int priority) { drainer_fifo_ = priority; }
  void start();
  // Stops the threads and closes the rings (before the instance goes).
  void stop();

 private:
  class TextChannel;
  class CpuChannel;
  void control_loop();   // opens the rings while someone reads, closes them after
  void drain_loop(int cpu);  // reads one CPU's ring while they are open
  void place_drainer(int cpu);  // the calling drainer's (or notifier's) CPU and nice value
  void wake_drainers();
  void notify(int cpu);  // cpu < 0: every listener
  // Has CPU `cpu`'s notifier thread call notify(cpu); never waits for it.
  void request_notify(int cpu);
  void notify_loop(int cpu);  // a CPU's notifier thread
  void report(const std::string& line);  // stderr and on_ring_error()
  void reader_count(int delta);
  Status open_rings();
  void close_rings();
  void release_queues();  // the memory of the queues that hold nothing
  std::vector<std::unique_lock<std::mutex>> lock_all();
  bool take_text(std::size_t max, std::string& out);
  bool take_cpu(int cpu, std::size_t max, std::string& out);
  bool lease_cpu(int cpu, std::size_t max, StreamChannel::Lease& out);
  void release_cpu(int cpu);
  bool readable(int cpu);  // cpu < 0: any
  void lost_record(int cpu, std::uint64_t ts, std::uint64_t count, bool unknown, std::string& out_bytes);

  const RingFiles files_;
  const ReaderMode mode_;
  const WantedEvents* wanted_;
  ProjectionTable table_;
  CommCache comms_;  // the text stream's task names
  std::unordered_map<std::uint32_t, TextFormat> text_;  // by stable id

  // One CPU's side: its queues and their locks, which its drainer shares
  // (CpuQueues: take_text() holds every `mu`, in CPU order), and what the
  // hub keeps for the CPU between sessions.
  struct PerCpu : CpuQueues {
    PerCpu(std::size_t queue_bytes, std::size_t smallest_record)
        : CpuQueues(queue_bytes, std::min(kStagingBytes, queue_bytes), smallest_record) {}
    RingStats closed;  // counts of the rings closed so far
    // The kernel's overrun counter up to which losses were reported (0 at
    // first: the instance is new at mount); what the kernel overwrote while
    // no stream was open is reported when the next one opens.
    std::uint64_t overrun_seen = 0;
    // The drainer's requests to tell the CPU's listeners (notify_loop()).
    // notify_mu is only ever held for a moment, never while listeners run.
    std::mutex notify_mu;
    std::condition_variable notify_cv;
    bool notify_pending = false, notify_stop = false;
  };
  std::vector<std::unique_ptr<PerCpu>> cpu_;
  std::mutex error_mu_;
  std::string ring_error_;
  std::atomic<int> ring_errno_{0};  // EIO while the rings cannot be opened
  std::function<void(const std::string&)> report_error_;
  RingOpener open_ring_;
  ReadinessOpener open_readiness_;

  // Changed by the control thread, under every PerCpu::mu, while every
  // drainer is parked; drainer N uses rings_[N] under cpu_[N]->ring_mu.
  std::vector<std::unique_ptr<CpuRing>> rings_;
  int readiness_fd_ = -1;  // opened and closed with the rings (-1: none)
  std::mutex state_mu_;
  std::condition_variable state_cv_;
  int readers_ = 0;
  bool stopping_ = false;
  // The rings are open and the drainers may read them (set by the control
  // thread, under state_mu_; a drainer leaves its ring when it goes false).
  std::atomic<bool> rings_live_{false};
  int parked_ = 0;  // drainers not using their ring (under state_mu_)
  std::vector<std::pair<int, std::function<void()>>> listeners_;  // CPU (or -1), listener
  std::thread control_;
  std::vector<std::thread> drainers_;  // one per CPU
  // One per CPU: tells that CPU's listeners when its drainer asks. A
  // listener does the waiting readers' work: it takes their records (for
  // trace_pipe, merging and rendering every CPU's under all the queues'
  // locks) and sends the replies; a drainer that did this itself would not
  // be reading its ring meanwhile, and the ring would overrun. It runs where
  // its drainer does, at the same nice value: it takes records with the
  // queue held, and preempted there by the CPU's writer it would keep the
  // drainer, its staging queue full, waiting for the queue.
  std::vector<std::thread> notifiers_;
  // The most queue bytes one raw record can make: the records of every
  // stable event over one raw event, and a lost-events record (for the
  // drainer's staging batches, so that nothing staged is dropped).
  std::size_t max_entry_ = 0;
  std::optional<int> drainer_nice_;  // unset: the daemon's
  std::optional<int> drainer_fifo_;  // set: SCHED_FIFO at that priority instead
  std::once_flag nice_warning_, fifo_warning_;
};

}  // namespace eventfs
