#include "stream/cpu_drainer.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "stream/thread_placement.h"

namespace eventfs {

// Projects one CPU's raw records into `target`: the CPU's queue (its lock
// held) or the drainer's own staging queue.
class CpuDrainer::Sink final : public RingSink {
 public:
  Sink(const ProjectionTable& table, const WantedEvents* wanted) : table_(table), wanted_(wanted) {}
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    for (const Projection* p = table_.find_record(raw, len); p; p = table_.next_same_raw(*p)) {
      if (wanted_ && !wanted_->wanted(table_.index_of(*p))) continue;
      std::uint8_t* to = target->reserve(p->pid(raw, len), record_size(*p), ts);
      if (!to && overflow) [[unlikely]] {
        // The queue's only room is under a lease's bytes (a reply being
        // sent): this record and the rest of the batch wait in the staging
        // queue until the lease is released, instead of being dropped (a
        // batch beyond the staging queue's room drops its oldest there,
        // counted as the queue's would have been).
        target = overflow;
        overflow = nullptr;
        to = target->reserve(p->pid(raw, len), record_size(*p), ts);
      }
      if (to)
        write_record(*p, ts, raw, len, to);
      else
        target->drop_record();
      ++added;
    }
  }
  void lost(std::uint64_t ts, std::uint64_t count, bool unknown) override {
    target->add_lost(ts, count, unknown);
    ++added;
  }
  RecordQueue* target = nullptr;
  RecordQueue* overflow = nullptr;  // where records go once `target` has no room but under a lease
  std::size_t added = 0;

 private:
  const ProjectionTable& table_;
  const WantedEvents* wanted_;
};

CpuDrainer::CpuDrainer(int cpu, HubCpu& queues, const ProjectionTable& table, const WantedEvents* wanted,
                       std::size_t max_entry, HubServices& hub)
    : cpu_(cpu),
      q_(queues),
      table_(table),
      wanted_(wanted),
      max_entry_(max_entry),
      hub_(hub) {
  q_.queue.set_cpu(static_cast<std::uint32_t>(cpu));  // (the drainer alone writes lost-events records)
  q_.staging.set_cpu(static_cast<std::uint32_t>(cpu));
}

void CpuDrainer::session(CpuRing& ring, int readiness_fd, const std::atomic<bool>& live) {
  // (Again at each session: a CPU that went offline took its threads'
  // affinity with it; the kernel let them run anywhere. Tried at each
  // turn for kPinRetryMs where it fails.)
  pinned_ = pin_to_cpu(cpu_);
  pin_until_ = Clock::now() + std::chrono::milliseconds(kPinRetryMs);
  q_.repin = true;
  {
    std::lock_guard ring_lock(q_.ring_mu);
    ring_fd_ = ring.poll_fd();
  }
  reported_ = 0;
  trim_at_ = Clock::now() + std::chrono::milliseconds(kTrimMs);
  DrainPolicy policy(Clock::now(), readiness_fd >= 0);
  while (live.load()) {
    auto now = Clock::now();
    const bool parked = q_.reader_parked.exchange(false, std::memory_order_relaxed);
    policy.set_watched(parked || q_.readers_waiting.load(std::memory_order_relaxed) > 0);
    const DrainPolicy::Wait w = policy.wait(now, !q_.staging.empty());
    pollfd fds[3] = {{q_.wake_fd, POLLIN, 0}, {w.ring ? ring_fd_ : -1, POLLIN, 0}, {w.readiness ? readiness_fd : -1, POLLIN, 0}};
    const int polled = ::poll(fds, 3, w.timeout_ms);
    if (fds[0].revents & POLLIN) {
      std::uint64_t n;
      (void)!read(q_.wake_fd, &n, sizeof n);
      continue;  // (the session may be over)
    }
    now = Clock::now();
    if (!pinned_ && now < pin_until_) pinned_ = pin_to_cpu(cpu_);
    DrainPolicy::Polled p;
    p.timed_out = polled == 0;
    p.ring_ready = fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP));
    p.written = fds[2].fd >= 0 && fds[2].revents != 0;
    if (policy.woke(now, p)) {
      policy.drained(drain(ring, now));
    } else if (!q_.staging.empty()) {  // staged while a reader held the queue: moved when it is free
      std::unique_lock lock(q_.mu, std::try_to_lock);
      if (lock && move_staged() != 0) {
        lock.unlock();
        hub_.tell(cpu_);
      }
    }
    // The drainer never waits for the queue here: what is still staged
    // goes over at a later turn (within kStagedRetryMs), and the readers
    // are told again then.
    if (policy.end_turn()) {
      if (!q_.staging.empty()) {
        std::unique_lock lock(q_.mu, std::try_to_lock);
        if (lock) move_staged();
      }
      hub_.tell(cpu_);
    }
    trim(now);
  }
  // Records the ring took from the kernel and has not delivered (spliced
  // sub-buffers not walked yet) go to the queue before the ring closes:
  // the kernel no longer has them for the next session.
  std::size_t untold = policy.untold();
  for (int i = 0; i < kSettleDrains && !ring.settled(); ++i) untold += drain(ring, Clock::now()).added;
  bool moved = false;
  if (!q_.staging.empty()) {  // what was staged when the session ended
    std::lock_guard lock(q_.mu);
    q_.queue.append(q_.staging);
    q_.staging_records.store(0, std::memory_order_relaxed);
    moved = true;
  }
  if (untold || moved) hub_.tell(cpu_);
}

std::size_t CpuDrainer::move_staged() {
  const std::uint64_t before = q_.staging.count();
  q_.queue.append(q_.staging, RecordQueue::Until::Lease);
  q_.staging_records.store(q_.staging.count(), std::memory_order_relaxed);
  return static_cast<std::size_t>(before - q_.staging.count());
}

void CpuDrainer::trim(Clock::time_point now) {
  if (now < trim_at_) return;
  std::unique_lock lock(q_.mu, std::try_to_lock);
  if (!lock) return;
  trim_at_ = now + std::chrono::milliseconds(kTrimMs);
  RecordQueue::Unused unused = q_.queue.trim();
  lock.unlock();
  unused.give_back();  // (the readers need not wait for the system)
  q_.staging.trim().give_back();
  q_.staging_memory.store(q_.staging.memory_bytes(), std::memory_order_relaxed);
}

DrainPolicy::Drained CpuDrainer::drain(CpuRing& ring, Clock::time_point now) {
  DrainPolicy::Drained d;
  std::optional<Error> failure;  // an error of the ring to report (with no lock held)
  {
    // A reader taking from the queue (or one preempted while it does) must
    // not hold the ring up: while the queue is busy, records go to the
    // drainer's staging queue, moved over when the queue is free (waiting
    // for it only if the staging queue is nearly full).
    std::size_t batch = kDrainBatch;
    std::unique_lock lock(q_.mu, std::try_to_lock);
    if (!lock) {
      batch = std::min(batch, q_.staging.free_bytes() / max_entry_);  // nothing staged is dropped for it
      if (batch < kDrainBatch / 16) {
        lock.lock();
        batch = kDrainBatch;
      }
    }
    if (lock && !q_.staging.empty()) {
      // Staged records moved over are news for the readers, told at the
      // turn's end. What a lease's bytes still keep out waits, and the ring
      // with it (it holds what comes meanwhile): retried within
      // kStagedRetryMs, not drained a record at a time into the staging
      // queue.
      d.added = move_staged();
      if (!q_.staging.empty()) {
        std::lock_guard ring_lock(q_.ring_mu);
        d.batch = batch;
        d.has_ring = ring.has_ring();
        d.settled = ring.settled();
        d.staging_empty = false;
        return d;
      }
    }
    Sink sink(table_, wanted_);
    sink.target = lock ? &q_.queue : &q_.staging;  // (with the lock, nothing is staged by now)
    if (lock) sink.overflow = &q_.staging;
    std::lock_guard ring_lock(q_.ring_mu);
    Result<std::size_t> got = ring.drain(sink, batch);
    if (ring.poll_fd() != ring_fd_) {
      // The kernel made the ring of a CPU that had none (it came online):
      // this thread and the notifier move there.
      ring_fd_ = ring.poll_fd();
      pinned_ = pin_to_cpu(cpu_);
      pin_until_ = now + std::chrono::milliseconds(kPinRetryMs);
      q_.repin = true;
    }
    if (!got && got.code() != reported_) {
      reported_ = got.code();
      failure = std::move(got).error();
    }
    d.got = got ? *got : 0;
    d.failed = !got;
    d.batch = batch;
    d.added += sink.added;
    d.has_ring = ring.has_ring();
    d.settled = ring.settled();
    d.staging_empty = q_.staging.empty();
    q_.staging_memory.store(q_.staging.memory_bytes(), std::memory_order_relaxed);
    q_.staging_records.store(q_.staging.count(), std::memory_order_relaxed);
  }
  if (failure)
    hub_.report(fmt::format("cannot read the ring buffer of CPU {}: {}", cpu_,
                        failure->reason.empty() ? std::strerror(failure->code) : failure->reason));
  return d;
}

}  // namespace eventfs
