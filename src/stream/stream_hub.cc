#include "stream/stream_hub.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "stream/cpu_stats.h"
#include "stream/hub_channels.h"

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
      notifiers_(cpus, *this),
      session_(cpu_, files_, mode, *this),
      merge_(cpu_, resolution, *this) {
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

void StreamHub::place_thread(int cpu) {
  pin_to_cpu(cpu);
  priority_.apply();
}

void StreamHub::notifier_woken(int cpu) {  // (its CPU came online; until it is there)
  HubCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  if (c.repin && pin_to_cpu(cpu)) c.repin = false;
}

void StreamHub::drain_loop(int cpu) {
  HubCpu& c = *cpu_[static_cast<std::size_t>(cpu)];
  place_thread(cpu);
  pthread_setname_np(pthread_self(), fmt::format("eventfs-cpu{}", cpu).substr(0, 15).c_str());
  CpuDrainer drainer(cpu, c, table_, wanted_, max_entry_, *this);
  // (The readiness descriptor is set with the rings, before they went live.)
  while (CpuRing* ring = session_.wait_for_rings(cpu)) drainer.session(*ring, session_.readiness_fd(), session_.live());
}

}  // namespace eventfs
