#include "stream/stream_hub.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include <eventfs/record.h>
#include <fmt/format.h>

#include "ring/any_cpu_readiness.h"

namespace eventfs {

// Projects one CPU's raw records into `target`: the CPU's queue (its lock
// held) or the drainer's own staging queue for that CPU.
class StreamHub::CpuSink final : public RingSink {
 public:
  CpuSink(StreamHub& hub, int cpu) : hub_(hub), cpu_(cpu) {}
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    for (const Projection* p = hub_.table_.find_record(raw, len); p; p = hub_.table_.next_same_raw(*p)) {
      if (hub_.wanted_ && !hub_.wanted_->wanted(hub_.table_.index_of(*p))) continue;
      if (std::uint8_t* to = target->reserve(p->pid(raw, len), record_size(*p))) write_record(*p, ts, raw, len, to);
      ++added;
    }
  }
  void lost(std::uint64_t ts, std::uint64_t count, bool unknown) override {
    if (std::uint8_t* to = target->reserve(0, lost_record_size()))
      write_lost_record(ts, count, static_cast<std::uint32_t>(cpu_), unknown, to);
    ++added;
  }
  RecordQueue* target = nullptr;
  std::size_t added = 0;

 private:
  StreamHub& hub_;
  int cpu_;
};

namespace {
// Moves every record of `from` to the back of `to`.
void move_records(RecordQueue& from, RecordQueue& to) {
  while (!from.empty()) {
    if (std::uint8_t* p = to.reserve(from.front_pid(), from.front_size())) std::memcpy(p, from.front(), from.front_size());
    from.pop();
  }
}

// On its own CPU, where the writer of the ring's records runs, when the
// daemon may use that CPU (a CPU kept out of its affinity, as isolated ones
// are, is left alone; so is an offline one, until it comes online: the
// kernel leaves offline CPUs out of the affinity it reports). Floating, two
// drainers woken at once can be put on the same CPU and take turns there
// while the other CPU's writer overruns its ring.
// True once the thread is on its CPU. False while the CPU is offline, or
// not yet back in the thread's affinity after coming online: the kernel
// adds it back a moment later (cpusets), so callers try again at later
// turns rather than once.
bool pin_to_cpu(int cpu) {
  cpu_set_t allowed;
  if (cpu < CPU_SETSIZE && pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0 &&
      CPU_ISSET(cpu, &allowed)) {
    cpu_set_t own;
    CPU_ZERO(&own);
    CPU_SET(cpu, &own);
    return pthread_setaffinity_np(pthread_self(), sizeof own, &own) == 0;
  }
  return false;
}
}  // namespace

class StreamHub::TextChannel final : public StreamChannel {
 public:
  explicit TextChannel(StreamHub& h) : hub_(h) {}
  bool take(std::size_t max, std::string& out) override { return hub_.take_text(max, out); }
  bool readable() override { return hub_.readable(-1); }
  int error() override { return hub_.ring_errno_.load(); }
  void reader_opened() override { hub_.reader_count(+1); }
  void reader_closed() override { hub_.reader_count(-1); }

 private:
  StreamHub& hub_;
};

class StreamHub::CpuChannel final : public StreamChannel {
 public:
  CpuChannel(StreamHub& h, int cpu) : hub_(h), cpu_(cpu) {}
  bool take(std::size_t max, std::string& out) override { return hub_.take_cpu(cpu_, max, out); }
  bool take_parts(std::size_t max, const SendParts& send) override { return hub_.take_cpu_parts(cpu_, max, send); }
  bool readable() override { return hub_.readable(cpu_); }
  int error() override { return hub_.ring_errno_.load(); }
  void reader_opened() override { hub_.reader_count(+1); }
  void reader_closed() override { hub_.reader_count(-1); }

 private:
  StreamHub& hub_;
  int cpu_;
};

StreamHub::StreamHub(RingFiles files, int cpus, const Resolution& resolution, ReaderMode mode,
                     std::size_t queue_bytes, const WantedEvents* wanted)
    : files_(std::move(files)), mode_(mode), wanted_(wanted), table_(resolution.available) {
  for (const auto& b : resolution.available) text_.emplace(b.event->id, TextFormat::compile(b));
  std::size_t most = 0, smallest = lost_record_size();
  for (const Projection& p : table_.projections()) smallest = std::min<std::size_t>(smallest, record_size(p));
  for (const Projection& head : table_.projections()) {
    if (table_.find(head.raw_id()) != &head) continue;  // not the first of its raw event
    std::size_t bytes = 0;
    for (const Projection* p = &head; p; p = table_.next_same_raw(*p)) bytes += record_size(*p);
    most = std::max(most, bytes);
  }
  max_entry_ = most + lost_record_size();  // (a sub-buffer's lost-events record may come first)
  for (int i = 0; i < cpus; ++i) {
    cpu_.push_back(std::make_unique<PerCpu>(queue_bytes, smallest));
    cpu_.back()->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
}

StreamHub::~StreamHub() {
  stop();
  for (auto& c : cpu_)
    if (c->wake_fd >= 0) close(c->wake_fd);
}

std::shared_ptr<StreamChannel> StreamHub::text_channel() { return std::make_shared<TextChannel>(*this); }

std::shared_ptr<StreamChannel> StreamHub::cpu_channel(int cpu) { return std::make_shared<CpuChannel>(*this, cpu); }

void StreamHub::on_data(std::function<void()> listener, int cpu) { listeners_.push_back({cpu, std::move(listener)}); }

void StreamHub::notify(int cpu) {
  for (auto& [of, l] : listeners_)
    if (cpu < 0 || of < 0 || of == cpu) l();
}

void StreamHub::request_notify(int cpu) {
  PerCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  {
    std::lock_guard lock(c.notify_mu);
    c.notify_pending = true;
  }
  c.notify_cv.notify_one();
}

void StreamHub::notify_loop(int cpu) {
  PerCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  place_drainer(cpu);
  pthread_setname_np(pthread_self(), fmt::format("eventfs-tell{}", cpu).substr(0, 15).c_str());
  std::unique_lock lock(c.notify_mu);
  for (;;) {
    c.notify_cv.wait(lock, [&c] { return c.notify_pending || c.notify_stop; });
    if (c.repin && pin_to_cpu(cpu)) c.repin = false;  // (its CPU came online; until it is there)
    if (c.notify_pending) {  // (before stopping: the drainers' last requests)
      c.notify_pending = false;
      lock.unlock();
      notify(cpu);
      lock.lock();
      continue;
    }
    return;
  }
}

void StreamHub::on_ring_error(std::function<void(const std::string&)> report) { report_error_ = std::move(report); }

void StreamHub::report(const std::string& line) {
  std::fprintf(stderr, "eventfs: %s\n", line.c_str());
  if (report_error_) report_error_(line);
}

void StreamHub::start() {
  if (control_.joinable()) return;
  // Named as top -H and ps -L show them.
  control_ = std::thread([this] { control_loop(); });
  pthread_setname_np(control_.native_handle(), "eventfs-streams");
  for (int cpu = 0; cpu < cpus(); ++cpu) {
    // (Each names itself once placed: a thread with its name has its CPU
    // and priority.)
    drainers_.emplace_back([this, cpu] { drain_loop(cpu); });
    notifiers_.emplace_back([this, cpu] { notify_loop(cpu); });
  }
}

void StreamHub::wake_drainers() {
  std::uint64_t one = 1;
  for (auto& c : cpu_)
    if (c->wake_fd >= 0) (void)!write(c->wake_fd, &one, sizeof one);
}

void StreamHub::stop() {
  {
    std::lock_guard lock(state_mu_);
    stopping_ = true;
  }
  state_cv_.notify_all();
  wake_drainers();
  if (control_.joinable()) control_.join();
  for (auto& t : drainers_) t.join();
  drainers_.clear();
  for (auto& c : cpu_) {
    {
      std::lock_guard lock(c->notify_mu);
      c->notify_stop = true;
    }
    c->notify_cv.notify_one();
  }
  for (auto& t : notifiers_) t.join();
  notifiers_.clear();
  close_rings();
}

void StreamHub::reader_count(int delta) {
  {
    std::lock_guard lock(state_mu_);
    readers_ += delta;
  }
  state_cv_.notify_all();
}

bool StreamHub::open_rings(std::string& error) {
  if (!rings_.empty()) return true;
  std::vector<std::unique_ptr<CpuRing>> rings;
  for (int cpu = 0; cpu < cpus(); ++cpu) {
    auto r = open_ring_ ? open_ring_(cpu, error) : open_cpu_ring(files_, cpu, mode_, error);
    if (!r) return false;
    rings.push_back(std::move(r));
  }
  // The queues' memory, faulted in before the locks are taken: unless still there from the last session (only this thread
  // frees it, between sessions; the drainers, which allocate a missing
  // queue, are parked). A CPU with no ring yet gets its queue's memory when
  // its first records come: a machine may have many more possible CPUs
  // than online ones.
  // (Opened before the locks too: the kernel takes its tracing lock for it.)
  int readiness = -1;
  if (open_readiness_) {
    readiness = open_readiness_();
  } else {
    std::string why;  // without it, idle rings are swept: nothing to report
    readiness = open_any_cpu_readiness(files_, why);
  }
  std::vector<std::pair<RecordQueue::Memory, RecordQueue::Memory>> memory(cpu_.size());
  for (std::size_t i = 0; i < cpu_.size(); ++i) {
    if (!rings[i]->has_ring()) continue;
    if (!cpu_[i]->queue.has_memory()) memory[i].first = cpu_[i]->queue.prefaulted();
    if (!cpu_[i]->staging.has_memory()) memory[i].second = cpu_[i]->staging.prefaulted();
  }
  auto locks = lock_all();
  for (std::size_t i = 0; i < cpu_.size(); ++i) {
    cpu_[i]->queue.adopt(std::move(memory[i].first));
    cpu_[i]->staging.adopt(std::move(memory[i].second));
  }
  rings_ = std::move(rings);
  for (std::size_t i = 0; i < rings_.size(); ++i) rings_[i]->count_losses_from(cpu_[i]->overrun_seen);
  readiness_fd_ = readiness;
  return true;
}

std::vector<std::unique_lock<std::mutex>> StreamHub::lock_all() {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& c : cpu_) locks.emplace_back(c->mu);
  return locks;
}

namespace {
void accumulate(RingStats& acc, const RingStats& s) {
  acc.entries += s.entries;
  acc.lost += s.lost;
  acc.lost_reports += s.lost_reports;
  acc.unknown_lost += s.unknown_lost;
  acc.overrun += s.overrun;
  acc.subbufs += s.subbufs;
  acc.swaps += s.swaps;
}
}  // namespace

void StreamHub::close_rings() {
  // (Closed after the locks: the kernel takes its tracing lock for it.)
  const int readiness = std::exchange(readiness_fd_, -1);
  auto locks = lock_all();
  for (std::size_t i = 0; i < rings_.size(); ++i) {
    PerCpu& c = *cpu_[i];
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

void StreamHub::release_queues() {  // (by the control thread, between sessions)
  auto locks = lock_all();
  for (auto& c : cpu_) {
    c->queue.release();  // kept while it holds records for the next reader
    c->staging.release();
  }
}

void StreamHub::control_loop() {
  std::unique_lock lock(state_mu_);
  // When the queues' memory goes, after the last stream closed.
  bool release_due = false;
  std::chrono::steady_clock::time_point release_at;
  for (;;) {
    if (readers_ == 0) ring_errno_.store(0);  // the next reader tries afresh
    auto changed = [this] { return stopping_ || (readers_ > 0) != rings_live_.load(); };
    if (release_due && !rings_live_) {
      if (!state_cv_.wait_until(lock, release_at, changed)) {
        release_due = false;
        lock.unlock();
        release_queues();
        lock.lock();
        continue;
      }
    } else {
      state_cv_.wait(lock, changed);
    }
    if (rings_live_ && (stopping_ || readers_ == 0)) {
      // Nobody reads: leave the kernel's rings alone, once every drainer has
      // let go of its ring.
      rings_live_ = false;
      wake_drainers();
      state_cv_.wait(lock, [this] { return parked_ == cpus(); });
      lock.unlock();
      close_rings();
      lock.lock();
      release_due = true;
      release_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReleaseAfterMs);
      continue;
    }
    if (stopping_) return;
    lock.unlock();
    std::string error;
    if (open_rings(error)) {
      if (ring_errno_.exchange(0) != 0) {
        std::lock_guard elock(error_mu_);
        ring_error_.clear();
      }
      lock.lock();
      rings_live_ = true;
      state_cv_.notify_all();
      continue;
    }
    bool news;
    {
      std::lock_guard elock(error_mu_);
      news = ring_error_ != error;
      ring_error_ = error;
    }
    if (news) report("cannot read the ring buffer: " + error);
    // Readers waiting get the error now, later ones at once; retried every
    // second while someone reads.
    if (ring_errno_.exchange(EIO) != EIO)
      notify(-1);
    lock.lock();
    state_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || readers_ == 0; });
  }
}

void StreamHub::place_drainer(int cpu) {
  pin_to_cpu(cpu);
  if (drainer_fifo_) {
    sched_param sp{};
    sp.sched_priority = *drainer_fifo_;
    int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (e == 0) return;
    std::call_once(fifo_warning_, [&] {
      std::fprintf(stderr, "eventfs: cannot make the ring readers SCHED_FIFO at priority %d: %s\n", *drainer_fifo_,
                   std::strerror(e));
    });
    // (then at their nice value)
  }
  if (drainer_nice_ && setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), *drainer_nice_) != 0) {
    int e = errno;
    std::call_once(nice_warning_, [&] {
      std::fprintf(stderr, "eventfs: cannot set the nice value of the ring readers to %d: %s\n", *drainer_nice_,
                   std::strerror(e));
    });
  }
}

void StreamHub::drain_loop(int cpu) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kRest = std::chrono::milliseconds(kRestMs);
  PerCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  place_drainer(cpu);
  pthread_setname_np(pthread_self(), fmt::format("eventfs-cpu{}", cpu).substr(0, 15).c_str());
  CpuSink sink(*this, cpu);
  constexpr auto kStagedRetry = std::chrono::milliseconds(1);
  for (;;) {
    {
      std::unique_lock lock(state_mu_);
      ++parked_;
      state_cv_.notify_all();
      state_cv_.wait(lock, [this] { return stopping_ || rings_live_.load(); });
      if (stopping_) return;
      --parked_;
    }
    // (Again at each session: a CPU that went offline took its threads'
    // affinity with it; the kernel let them run anywhere. Tried at each
    // turn for kPinRetryMs where it fails.)
    bool pinned = pin_to_cpu(cpu);
    auto pin_until = Clock::now() + std::chrono::milliseconds(kPinRetryMs);
    c.repin = true;
    int ring_fd;
    {
      std::lock_guard ring_lock(c.ring_mu);
      ring_fd = rings_[static_cast<std::size_t>(cpu)]->poll_fd();
    }
    const int readiness_fd = readiness_fd_;  // (set with the rings, before they went live)
    // A new session: read the ring at once. Then: again at once while the
    // last turn took a full batch; when the kernel says the ring is ready
    // (it wakes a poller once the ring is buffer_percent full, half by
    // default), but not within kRest of catching up with the writer; and
    // at each sweep (kPollMs apart while records come, so a trickle comes in
    // batches at most that late; doubling up to kIdlePollMs while sweeps
    // find nothing, so that an idle open stream costs few wakeups, but not
    // so far that a storm starting on an idle stream overruns the ring before
    // the first sweep: the kernel's buffer_percent wakeup alone can come too
    // late; and a sweep reads nothing while that wakeup came within two
    // intervals, since it would find only the writer's part-filled
    // sub-buffer, copied event by event). Not reading at the writer's heels
    // lets the kernel fill whole sub-buffers,
    // which read(2) takes by swapping a page (a partly read sub-buffer is
    // copied event by event, and mmap's GET_READER consumes event by event);
    // and the kernel's readiness can stay up after a catch-up, so polling
    // such a ring at once again would spin.
    // Once two sweeps in a row found nothing (and the ring has nothing
    // delivered late: CpuRing::settled), no more sweeps: the reader waits
    // for the kernel to say a record was written on any CPU (the instance's
    // trace_pipe; any_cpu_readiness.h), so an idle open stream costs a
    // wakeup a second (kIdleWaitMs: the kernel's own wakeup can miss a lone
    // record, a race its code admits to), and the first record after a
    // pause comes at once. That readiness is up while another CPU's records
    // are unread: a turn it wakes that finds nothing here counts as a
    // sweep, and each such turn in a row doubles the empty sweeps needed
    // before it is waited for again (up to 65, 650 ms), so that a reader of
    // an idle CPU beside a busy one wakes about as often as the sweeps do,
    // never spins. A CPU with no ring yet waits too, at most kIdleWaitMs:
    // its ring is looked for once a second (PendingCpuRing).
    bool behind = true;
    bool idle = false;  // waiting for the instance's readiness (or a second), not for a sweep
    int quiet = 0;      // timed sweeps in a row that found nothing
    int useless = 0;    // turns in a row the readiness woke that found nothing here
    int reported = 0;  // the ring's error this session, once told
    Clock::time_point rest_until, last_ready, last_sweep = Clock::now();
    auto interval = std::chrono::milliseconds(kPollMs);
    std::size_t added = 0;  // records queued since readers were last told
    while (rings_live_.load()) {
      auto now = Clock::now();
      bool resting = now < rest_until;
      pollfd fds[3] = {{c.wake_fd, POLLIN, 0}, {resting ? -1 : ring_fd, POLLIN, 0}, {idle ? readiness_fd : -1, POLLIN, 0}};
      auto wake_at = last_sweep + interval;
      if (resting) wake_at = std::min(wake_at, rest_until);
      if (!c.staging.empty()) wake_at = std::min(wake_at, now + kStagedRetry);
      long long wait_ms = 0;
      if (idle)
        wait_ms = kIdleWaitMs;  // (nothing staged; a rest left over is covered: the readiness says when a record comes)
      else if (!behind && wake_at > now)  // rounded up: never spin on a sub-millisecond wait
        wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now + std::chrono::microseconds(999)).count();
      const int polled = ::poll(fds, 3, static_cast<int>(wait_ms));
      if (fds[0].revents & POLLIN) {
        std::uint64_t n;
        (void)!read(c.wake_fd, &n, sizeof n);
        continue;  // (the session may be over)
      }
      now = Clock::now();
      if (!pinned && now < pin_until) pinned = pin_to_cpu(cpu);
      const bool written = fds[2].fd >= 0 && fds[2].revents != 0;  // (POLLERR too: swept, then not waited on again)
      bool sweep = written || now >= last_sweep + interval;
      if (sweep) last_sweep = now;
      bool ready = fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP));
      if (ready) last_ready = now;
      if (idle && polled == 0) useless = 0;  // (no record anywhere for a second)
      idle = false;
      std::size_t before = added;
      bool drain = behind || ready || written || (sweep && now - last_ready >= 2 * interval);
      if (!drain && !c.staging.empty()) {  // staged while a reader held the queue: moved when it is free
        std::unique_lock lock(c.mu, std::try_to_lock);
        if (lock) {
          move_records(c.staging, c.queue);
          lock.unlock();
          request_notify(cpu);
        }
      }
      int failed = 0;  // an error of the ring to report (with no lock held)
      std::string failure;
      if (drain) {
        // A reader taking from the queue (or one preempted while it does)
        // must not hold the ring up: while the queue is busy, records go to
        // the drainer's staging queue, moved over when the queue is free
        // (waiting for it only if the staging queue is nearly full).
        std::size_t batch = kDrainBatch;
        std::unique_lock lock(c.mu, std::try_to_lock);
        if (!lock) {
          batch = std::min(batch, c.staging.free_bytes() / max_entry_);  // nothing staged is ever dropped
          if (batch < kDrainBatch / 16) {
            lock.lock();
            batch = kDrainBatch;
          }
        }
        if (lock) move_records(c.staging, c.queue);
        sink.target = lock ? &c.queue : &c.staging;
        sink.added = 0;
        std::lock_guard ring_lock(c.ring_mu);
        CpuRing& ring = *rings_[static_cast<std::size_t>(cpu)];
        int got = ring.drain(sink, batch);
        if (ring.poll_fd() != ring_fd) {
          // The kernel made the ring of a CPU that had none (it came
          // online): this thread and the notifier move there.
          ring_fd = ring.poll_fd();
          pinned = pin_to_cpu(cpu);
          pin_until = now + std::chrono::milliseconds(kPinRetryMs);
          c.repin = true;
        }
        if (got < 0 && -got != reported) {
          failed = reported = -got;
          failure = ring.last_error();
        }
        behind = got == static_cast<int>(batch);
        // (Not after a sweep that found nothing, the ring not ready: an idle
        // stream's reader would wake twice a sweep, at the rest's end too.)
        if (!behind && (got != 0 || ready)) rest_until = now + kRest;
        added += sink.added;
        const bool found = got != 0 || sink.added != 0 || ready;
        if (written) useless = found ? 0 : useless + 1;
        if (found || written)
          quiet = 0;
        else if (sweep)
          ++quiet;
        idle = (readiness_fd >= 0 || !ring.has_ring()) && !found && !written && c.staging.empty() &&
               ring.settled() && quiet >= 1 + (1 << std::min(useless, 6));
      } else if (sweep) {
        quiet = 0;  // (not looked at: the kernel's wakeups keep coming)
      }
      if (failed)
        report(fmt::format("cannot read the ring buffer of CPU {}: {}", cpu,
                           failure.empty() ? std::strerror(failed) : failure));
      if (sweep)
        interval = added > before ? std::chrono::milliseconds(kPollMs)
                                  : std::min(interval * 2, std::chrono::milliseconds(kIdlePollMs));
      // Waiting readers are answered once the ring is caught up, or every
      // kNotifyRecords in a storm: fewer, larger answers, and the drainer
      // gets back to the ring sooner. The drainer never waits for the queue
      // here: what is still staged goes over at a later turn (within
      // kStagedRetry), and the readers are told again then.
      if (added && (!behind || added >= kNotifyRecords)) {
        if (!c.staging.empty()) {
          std::unique_lock lock(c.mu, std::try_to_lock);
          if (lock) move_records(c.staging, c.queue);
        }
        request_notify(cpu);
        added = 0;
      }
    }
    bool moved = false;
    if (!c.staging.empty()) {  // what was staged when the session ended
      std::lock_guard lock(c.mu);
      move_records(c.staging, c.queue);
      moved = true;
    }
    if (added || moved) request_notify(cpu);
  }
}

void StreamHub::lost_record(int cpu, std::uint64_t ts, std::uint64_t count, bool unknown, std::string& out) {
  std::uint8_t buf[64];
  std::uint32_t n = write_lost_record(ts, count, static_cast<std::uint32_t>(cpu), unknown, buf);
  out.append(reinterpret_cast<const char*>(buf), n);
}

bool StreamHub::readable(int cpu) {
  for (std::size_t i = 0; i < cpu_.size(); ++i) {
    if (cpu >= 0 && i != static_cast<std::size_t>(cpu)) continue;
    PerCpu& c = *cpu_[i];
    std::lock_guard lock(c.mu);
    if (c.queue.has_dropped() || !c.queue.empty()) return true;
  }
  return false;
}

bool StreamHub::take_cpu(int cpu, std::size_t max, std::string& out) {
  PerCpu& c = *cpu_.at(static_cast<std::size_t>(cpu));
  std::lock_guard lock(c.mu);
  RecordQueue& q = c.queue;
  std::size_t start = out.size();
  if (RecordQueue::Dropped d = q.take_dropped(); d.count || d.unknown)
    lost_record(cpu, q.empty() ? 0 : q.front_ts(), d.count, d.unknown, out);
  std::size_t used = out.size() - start;
  if (used < max || used == 0) q.take_into(out, max - std::min(used, max), used == 0);
  return out.size() > start;
}

bool StreamHub::take_cpu_parts(int cpu, std::size_t max, const StreamChannel::SendParts& send) {
  PerCpu& c = *cpu_.at(static_cast<std::size_t>(cpu));
  std::lock_guard lock(c.mu);
  RecordQueue& q = c.queue;
  if (q.empty() || q.has_dropped()) return false;  // a lost-events record to make first: take_cpu()
  RecordQueue::Runs runs = q.front_runs(max, false);
  if (runs.n == 0) return false;
  std::string_view parts[2];
  for (int i = 0; i < runs.n; ++i) parts[i] = {reinterpret_cast<const char*>(runs.at[i]), runs.bytes[i]};
  send(parts, runs.n);  // the queue's lock held: the drainer stages meanwhile
  q.pop_front(runs);
  return true;
}

namespace {
// The text stream's mark of a gap, in trace_pipe's words.
std::string lost_line(std::size_t cpu, std::uint64_t count, bool unknown) {
  if (unknown) return fmt::format("CPU:{} [LOST EVENTS]\n", cpu);
  return fmt::format("CPU:{} [LOST {} EVENTS]\n", cpu, count);
}
}  // namespace

bool StreamHub::take_text(std::size_t max, std::string& out) {
  auto locks = lock_all();
  std::size_t start = out.size();
  while (out.size() - start < max) {
    // The oldest head among the CPUs.
    int best = -1;
    std::uint64_t best_ts = 0;
    for (std::size_t c = 0; c < cpu_.size(); ++c) {
      RecordQueue& q = cpu_[c]->queue;
      if (RecordQueue::Dropped d = q.take_dropped(); d.count || d.unknown) {
        out += lost_line(c, d.count, d.unknown);
        continue;
      }
      if (q.empty()) continue;
      if (best < 0 || q.front_ts() < best_ts) {
        best = static_cast<int>(c);
        best_ts = q.front_ts();
      }
    }
    if (best < 0) break;
    RecordQueue& q = cpu_[static_cast<std::size_t>(best)]->queue;
    eventfs_record_header h;
    std::memcpy(&h, q.front(), sizeof h);
    if (h.id == EVENTFS_ID_LOST) {
      eventfs_lost l;
      std::memcpy(&l, q.front() + sizeof h, sizeof l);
      out += lost_line(static_cast<std::size_t>(best), l.count, (l.flags & EVENTFS_LOST_COUNT_UNKNOWN) != 0);
    } else if (auto it = text_.find(h.id); it != text_.end()) {
      it->second.render(out, q.front_pid(), static_cast<unsigned>(best), h.timestamp, q.front() + sizeof h);
    }
    q.pop();
  }
  return out.size() > start;
}

std::string StreamHub::stats_text(int cpu) {
  auto i = static_cast<std::size_t>(cpu);
  PerCpu& c = *cpu_.at(i);
  std::lock_guard lock(c.mu);
  RingStats s = c.closed;
  const char* mode = "closed";
  if (i < rings_.size()) {  // (rings_ changes under every CPU's mu)
    std::lock_guard ring_lock(c.ring_mu);
    accumulate(s, rings_[i]->stats());
    mode = rings_[i]->mode();
  }
  const RecordQueue& q = c.queue;
  return fmt::format(
      "entries: {}\n"
      "read events: {}\n"
      "lost events: {}\n"
      "lost reports: {}\n"
      "lost reports without count: {}\n"
      "overrun: {}\n"
      "dropped by eventfs: {}\n"
      "sub-buffers: {}\n"
      "reader swaps: {}\n"
      "reader: {}\n",
      q.count(), s.entries, s.lost, s.lost_reports, s.unknown_lost, s.overrun, q.dropped_total(), s.subbufs,
      s.swaps, mode);
}

}  // namespace eventfs
