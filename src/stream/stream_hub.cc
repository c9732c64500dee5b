#include "stream/stream_hub.h"

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
  bool lease(std::size_t max, Lease& out) override { return hub_.lease_cpu(cpu_, max, out); }
  void release(const Lease&) override { hub_.release_cpu(cpu_); }
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
    : files_(std::move(files)),
      mode_(mode),
      wanted_(wanted),
      table_(resolution.available),
      comms_([this] { return files_.saved_cmdlines(); }) {
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

Status StreamHub::open_rings() {
  if (!rings_.empty()) return {};
  std::vector<std::unique_ptr<CpuRing>> rings;
  for (int cpu = 0; cpu < cpus(); ++cpu) {
    auto r = open_ring_ ? open_ring_(cpu) : open_cpu_ring(files_, cpu, mode_);
    if (!r) return std::move(r).error();
    rings.push_back(std::move(*r));
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
  } else if (Result<int> fd = open_any_cpu_readiness(files_)) {
    readiness = *fd;  // (without it, idle rings are swept: nothing to report)
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
  return {};
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
    Status opened = open_rings();
    if (opened) {
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
    const std::string& error = opened.reason();
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
  PerCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  place_drainer(cpu);
  pthread_setname_np(pthread_self(), fmt::format("eventfs-cpu{}", cpu).substr(0, 15).c_str());
  CpuDrainer drainer(
      cpu, c, table_, wanted_, max_entry_, [this, cpu] { request_notify(cpu); },
      [this](const std::string& line) { report(line); });
  for (;;) {
    {
      std::unique_lock lock(state_mu_);
      ++parked_;
      state_cv_.notify_all();
      state_cv_.wait(lock, [this] { return stopping_ || rings_live_.load(); });
      if (stopping_) return;
      --parked_;
    }
    CpuRing* ring;
    {
      std::lock_guard ring_lock(c.ring_mu);
      ring = rings_[static_cast<std::size_t>(cpu)].get();
    }
    // (readiness_fd_ is set with the rings, before they went live.)
    drainer.session(*ring, readiness_fd_, rings_live_);
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

bool StreamHub::lease_cpu(int cpu, std::size_t max, StreamChannel::Lease& out) {
  PerCpu& c = *cpu_.at(static_cast<std::size_t>(cpu));
  std::lock_guard lock(c.mu);
  RecordQueue& q = c.queue;
  if (q.empty() || q.has_dropped()) return false;  // a lost-events record to make first: take_cpu()
  RecordQueue::Runs runs = q.lease(max);
  if (runs.n == 0) return false;
  out.n = runs.n;
  for (int i = 0; i < runs.n; ++i) out.parts[i] = {reinterpret_cast<const char*>(runs.at[i]), runs.bytes[i]};
  return true;
}

void StreamHub::release_cpu(int cpu) {
  PerCpu& c = *cpu_.at(static_cast<std::size_t>(cpu));
  std::lock_guard lock(c.mu);
  c.queue.unpin();
}

namespace {
// The text stream's mark of a gap, in trace_pipe's words.
std::string lost_line(std::size_t cpu, std::uint64_t count, bool unknown) {
  if (unknown) return fmt::format("CPU:{} [LOST EVENTS]\n", cpu);
  return fmt::format("CPU:{} [LOST {} EVENTS]\n", cpu, count);
}
}  // namespace

bool StreamHub::take_text(std::size_t max, std::string& out) {
  comms_.refresh();  // (before the queues' locks: it may read saved_cmdlines)
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
      char comm[16];
      const std::size_t n = comms_.name_of(h.pid, comm);
      it->second.render(out, {comm, n}, h.pid, static_cast<unsigned>(best), h.timestamp, q.front() + sizeof h);
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
