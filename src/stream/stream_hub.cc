#include "stream/stream_hub.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "stream/cpu_stats.h"
#include "stream/hub_channels.h"
#include "stream/thread_placement.h"

namespace eventfs {
namespace {

// The most queue bytes one raw record can make (StreamHub::max_entry_).
std::size_t max_entry_of(const ProjectionTable& table) {
  std::size_t most = 0;
  for (const Projection& head : table.projections()) {
    if (table.find(head.raw_id()) != &head) continue;  // not the first of its raw event
    std::size_t bytes = 0;
    for (const Projection* p = &head; p; p = table.next_same_raw(*p)) bytes += record_size(*p);
    most = std::max(most, bytes);
  }
  return most + lost_record_size();  // (a sub-buffer's lost-events record may come first)
}

}  // namespace

StreamHub::StreamHub(RingFiles files, int cpus, const Resolution& resolution, ReaderMode mode,
                     std::size_t queue_bytes, const WantedEvents* wanted)
    : files_(std::move(files)),
      wanted_(wanted),
      table_(resolution.available),
      max_entry_(max_entry_of(table_)),
      notifiers_(
          cpus, [this](int cpu) { place_drainer(cpu); }, [this](int cpu) { repin_notifier(cpu); }),
      session_(
          cpu_, files_, mode, [this] { notifiers_.notify(-1); }, [this](const std::string& line) { report(line); }),
      merge_(cpu_, resolution, [this] { return files_.saved_cmdlines(); }) {
  std::size_t smallest = lost_record_size();
  for (const Projection& p : table_.projections()) smallest = std::min<std::size_t>(smallest, record_size(p));
  for (int i = 0; i < cpus; ++i) {
    cpu_.push_back(std::make_unique<HubCpu>(queue_bytes, kStagingBytes, smallest));
    cpu_.back()->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
}

StreamHub::~StreamHub() {
  stop();
  for (auto& c : cpu_)
    if (c->wake_fd >= 0) close(c->wake_fd);
}

std::shared_ptr<StreamChannel> StreamHub::text_channel() {
  return std::make_shared<TextChannel>(cpu_, session_, merge_);
}

std::shared_ptr<StreamChannel> StreamHub::cpu_channel(int cpu) {
  return std::make_shared<CpuChannel>(cpu_, session_, cpu);
}

std::string StreamHub::stats_text(int cpu) {
  const auto i = static_cast<std::size_t>(cpu);
  return cpu_stats_text(*cpu_.at(i), session_, files_, i);
}

void StreamHub::report(const std::string& line) {
  std::fprintf(stderr, "eventfs: %s\n", line.c_str());
  if (report_error_) report_error_(line);
}

void StreamHub::start() {
  if (started_) return;
  started_ = true;
  session_.start();
  for (int cpu = 0; cpu < cpus(); ++cpu) {
    // (Each names itself once placed: a thread with its name has its CPU
    // and priority.)
    drainers_.emplace_back([this, cpu] { drain_loop(cpu); });
    notifiers_.start(cpu);
  }
}

void StreamHub::stop() {
  session_.stop();
  for (auto& t : drainers_) t.join();
  drainers_.clear();
  notifiers_.stop();
  session_.close_rings();
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

void StreamHub::repin_notifier(int cpu) {  // (its CPU came online; until it is there)
  HubCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  if (c.repin && pin_to_cpu(cpu)) c.repin = false;
}

void StreamHub::drain_loop(int cpu) {
  HubCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  place_drainer(cpu);
  pthread_setname_np(pthread_self(), fmt::format("eventfs-cpu{}", cpu).substr(0, 15).c_str());
  CpuDrainer drainer(
      cpu, c, table_, wanted_, max_entry_, [this, cpu] { notifiers_.request(cpu); },
      [this](const std::string& line) { report(line); });
  // (The readiness descriptor is set with the rings, before they went live.)
  while (CpuRing* ring = session_.wait_for_rings(cpu)) drainer.session(*ring, session_.readiness_fd(), session_.live());
}

}  // namespace eventfs
