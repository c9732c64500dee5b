// The session of open rings behind the stream hub: while (and only while)
// some stream is open, the rings of every CPU of eventfs's instance are
// open and the drainers read them. The control thread (control_loop())
// opens them when the first reader comes, with the descriptor that polls
// readable once any CPU's ring holds a record (ring/any_cpu_readiness.h),
// and closes them once every drainer has let go of its ring after the last
// reader left; the queues' memory goes kReleaseAfterMs later. While the
// rings cannot be opened the readers get EIO, and the open is retried every
// second.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "error/result.h"
#include "ring/ring.h"
#include "stream/hub_cpu.h"
#include "stream/hub_services.h"

namespace eventfs {

class RingSession {
 public:
  // The queues' memory is freed this long after the last stream closed,
  // unless records wait in a queue for the next reader.
  static constexpr int kReleaseAfterMs = 3000;
  using RingOpener = std::function<Result<std::unique_ptr<CpuRing>>(int cpu)>;
  using ReadinessOpener = std::function<int()>;  // a descriptor, or -1: none

  // The control thread tells `hub` when the rings cannot be opened
  // (report() and tell_all()).
  RingSession(HubCpus& cpus, RingFiles files, ReaderMode mode, HubServices& hub);

  // Before start(); by default open_cpu_ring() and open_any_cpu_readiness().
  void set_ring_opener(RingOpener open) { open_ring_ = std::move(open); }
  void set_readiness_opener(ReadinessOpener open) { open_readiness_ = std::move(open); }

  void start();  // the control thread
  // Stops the control thread (the drainers see stopping() once woken).
  void stop();
  // Closes the rings (after stop(), once the drainers are gone).
  void close_rings();

  void reader_count(int delta);
  int error() const { return ring_errno_.load(); }  // EIO while the rings cannot be opened

  // A drainer between sessions: waits until the rings are live and returns
  // its CPU's ring, or nullptr when the hub stops.
  CpuRing* wait_for_rings(int cpu);
  int readiness_fd() const { return readiness_fd_; }
  const std::atomic<bool>& live() const { return rings_live_; }
  // CPU `cpu`'s ring, or nullptr while the rings are closed (under the
  // CPU's mu: the rings change under every CPU's mu).
  const CpuRing* ring_of(std::size_t cpu) const { return cpu < rings_.size() ? rings_[cpu].get() : nullptr; }

 private:
  void control_loop();
  void close_when_parked(std::unique_lock<std::mutex>& lock);
  void fail_open(const std::string& error);
  Status open_rings();
  int open_readiness();
  void release_queues();  // the memory of the queues that hold nothing
  void wake_drainers();
  int cpus() const { return static_cast<int>(cpus_.size()); }

  HubCpus& cpus_;
  const RingFiles files_;
  const ReaderMode mode_;
  HubServices& hub_;
  RingOpener open_ring_;
  ReadinessOpener open_readiness_;

  std::mutex error_mu_;
  std::string ring_error_;
  std::atomic<int> ring_errno_{0};

  // Changed by the control thread, under every CPU's mu, while every
  // drainer is parked; drainer N uses rings_[N] under its CPU's ring_mu.
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
  // When the queues' memory goes, after the last stream closed.
  bool release_due_ = false;
  std::chrono::steady_clock::time_point release_at_;
  std::thread control_;
};

}  // namespace eventfs
