#include "stream/ring_session.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "ring/any_cpu_readiness.h"
#include "stream/cpu_stats.h"

namespace eventfs {

RingSession::RingSession(HubCpus& cpus, RingFiles files, ReaderMode mode, HubServices& hub)
    : cpus_(cpus), files_(std::move(files)), mode_(mode), hub_(hub) {}

void RingSession::start() {
  if (control_.joinable()) return;
  // Named as top -H and ps -L show it.
  control_ = std::thread([this] { control_loop(); });
  pthread_setname_np(control_.native_handle(), "eventfs-streams");
}

void RingSession::wake_drainers() {
  std::uint64_t one = 1;
  for (auto& c : cpus_)
    if (c->wake_fd >= 0) (void)!write(c->wake_fd, &one, sizeof one);
}

void RingSession::stop() {
  {
    std::lock_guard lock(state_mu_);
    stopping_ = true;
  }
  state_cv_.notify_all();
  wake_drainers();
  if (control_.joinable()) control_.join();
}

void RingSession::reader_count(int delta) {
  {
    std::lock_guard lock(state_mu_);
    readers_ += delta;
  }
  state_cv_.notify_all();
}

int RingSession::open_readiness() {
  if (open_readiness_) return open_readiness_();
  // (Without it, idle rings are swept: nothing to report.)
  Result<int> fd = open_any_cpu_readiness(files_);
  return fd ? *fd : -1;
}

Status RingSession::open_rings() {
  if (!rings_.empty()) return {};
  std::vector<std::unique_ptr<CpuRing>> rings;
  for (int cpu = 0; cpu < cpus(); ++cpu) {
    auto r = open_ring_ ? open_ring_(cpu) : open_cpu_ring(files_, cpu, mode_);
    if (!r) return std::move(r).error();
    rings.push_back(std::move(*r));
  }
  // The queues' memory (its first part faulted in: RecordQueue), made
  // before the locks are taken: unless still
  // there from the last session (only this thread frees it, between
  // sessions; the drainers, which allocate a missing queue, are parked). A
  // CPU with no ring yet gets its queue's memory when its first records
  // come: a machine may have many more possible CPUs than online ones.
  // (The readiness is opened before the locks too: the kernel takes its
  // tracing lock for it.)
  const int readiness = open_readiness();
  std::vector<std::pair<RecordQueue::Memory, RecordQueue::Memory>> memory(cpus_.size());
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    if (!rings[i]->has_ring()) continue;
    if (!cpus_[i]->queue.has_memory()) memory[i].first = cpus_[i]->queue.prefaulted();
    if (!cpus_[i]->staging.has_memory()) memory[i].second = cpus_[i]->staging.prefaulted();
  }
  auto locks = lock_all(cpus_);
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    cpus_[i]->queue.adopt(std::move(memory[i].first));
    cpus_[i]->staging.adopt(std::move(memory[i].second));
    cpus_[i]->staging_memory = cpus_[i]->staging.memory_bytes();
  }
  rings_ = std::move(rings);
  for (std::size_t i = 0; i < rings_.size(); ++i) rings_[i]->count_losses_from(cpus_[i]->overrun_seen);
  readiness_fd_ = readiness;
  return {};
}

void RingSession::close_rings() {
  // (Closed after the locks: the kernel takes its tracing lock for it.)
  const int readiness = std::exchange(readiness_fd_, -1);
  auto locks = lock_all(cpus_);
  for (std::size_t i = 0; i < rings_.size(); ++i) {
    HubCpu& c = *cpus_[i];
    RingStats s = rings_[i]->stats();
    accumulate(c.closed, s);  // the counts outlive the ring
    // Up to where this reader reported; a loss after its last sub-buffer is
    // reported by the next one. (A counter below that was reset: follow it.)
    c.overrun_seen = std::min(c.overrun_seen + s.lost, s.overrun_counter);
  }
  rings_.clear();
  locks.clear();
  if (readiness >= 0) close(readiness);
}

void RingSession::release_queues() {  // (by the control thread, between sessions)
  auto locks = lock_all(cpus_);
  for (auto& c : cpus_) {
    c->queue.release();  // kept while it holds records for the next reader
    c->staging.release();
    c->staging_memory = c->staging.memory_bytes();
  }
}

// Nobody reads: leave the kernel's rings alone, once every drainer has let
// go of its ring.
void RingSession::close_when_parked(std::unique_lock<std::mutex>& lock) {
  rings_live_ = false;
  wake_drainers();
  state_cv_.wait(lock, [this] { return parked_ == cpus(); });
  lock.unlock();
  close_rings();
  lock.lock();
  release_due_ = true;
  release_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReleaseAfterMs);
}

// The rings cannot be opened: reported once per distinct reason; readers
// waiting get the error now, later ones at once.
void RingSession::fail_open(const std::string& error) {
  bool news;
  {
    std::lock_guard elock(error_mu_);
    news = ring_error_ != error;
    ring_error_ = error;
  }
  if (news) hub_.report("cannot read the ring buffer: " + error);
  if (ring_errno_.exchange(EIO) != EIO) hub_.tell_all();
}

void RingSession::control_loop() {
  std::unique_lock lock(state_mu_);
  for (;;) {
    if (readers_ == 0) ring_errno_.store(0);  // the next reader tries afresh
    auto changed = [this] { return stopping_ || (readers_ > 0) != rings_live_.load(); };
    if (release_due_ && !rings_live_) {
      if (!state_cv_.wait_until(lock, release_at_, changed)) {
        release_due_ = false;
        lock.unlock();
        release_queues();
        lock.lock();
        continue;
      }
    } else {
      state_cv_.wait(lock, changed);
    }
    if (rings_live_ && (stopping_ || readers_ == 0)) {
      close_when_parked(lock);
      continue;
    }
    if (stopping_) return;
    lock.unlock();
    if (Status opened = open_rings(); !opened) {
      fail_open(opened.reason());
      // Retried every second while someone reads.
      lock.lock();
      state_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || readers_ == 0; });
      continue;
    }
    if (ring_errno_.exchange(0) != 0) {
      std::lock_guard elock(error_mu_);
      ring_error_.clear();
    }
    lock.lock();
    rings_live_ = true;
    state_cv_.notify_all();
  }
}

CpuRing* RingSession::wait_for_rings(int cpu) {
  {
    std::unique_lock lock(state_mu_);
    ++parked_;
    state_cv_.notify_all();
    state_cv_.wait(lock, [this] { return stopping_ || rings_live_.load(); });
    if (stopping_) return nullptr;
    --parked_;
  }
  HubCpu& c = *cpus_[static_cast<std::size_t>(cpu)];
  std::lock_guard ring_lock(c.ring_mu);
  return rings_[static_cast<std::size_t>(cpu)].get();
}

}  // namespace eventfs
