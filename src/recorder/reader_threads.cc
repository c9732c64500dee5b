#include "recorder/reader_threads.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <system_error>

namespace eventfs::recorder {
namespace {

using Clock = std::chrono::steady_clock;

// After the events are let go: how long a stream must stay empty to be
// done, and the most a drain takes (an event that cannot be turned off, such
// as a trace_marker write, may keep coming).
constexpr auto kQuiet = std::chrono::milliseconds(150);
constexpr auto kDrainLimit = std::chrono::seconds(2);
// Reads of one CPU in a row before the thread's next CPU gets its turn.
constexpr int kReadsPerTurn = 4;

}  // namespace

ReaderThreads::ReaderThreads(std::vector<CpuRecorder*> cpus, RecordControl& control)
    : cpus_(std::move(cpus)), control_(control) {}

Status ReaderThreads::start() {
  const std::size_t n = std::min(kMaxThreads, cpus_.size());
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<CpuRecorder*> mine;
    for (std::size_t i = t; i < cpus_.size(); i += n) mine.push_back(cpus_[i]);
    try {
      threads_.emplace_back([this, mine = std::move(mine)] { run(mine); });
    } catch (const std::system_error& e) {
      control_.phase = RecordControl::kStop;
      join();
      return fail(e.code().value(), e.what());
    }
  }
  return {};
}

ReaderThreads::~ReaderThreads() {
  if (!threads_.empty()) control_.phase = RecordControl::kStop;
  join();
}

void ReaderThreads::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void ReaderThreads::run(std::vector<CpuRecorder*> mine) {
  auto buf = std::make_unique<std::uint64_t[]>(kReadSize / 8);  // 8-aligned, as records are
  auto* base = reinterpret_cast<unsigned char*>(buf.get());
  struct Cpu {
    CpuRecorder* r;
    Clock::time_point last_data;
    bool done = false;
  };
  std::vector<Cpu> cpus;
  for (CpuRecorder* r : mine) cpus.push_back({r, Clock::now()});
  std::vector<pollfd> pfds;
  bool draining = false;
  Clock::time_point drain_start{};
  for (;;) {
    const int phase = control_.phase.load();
    if (phase == RecordControl::kStop) break;
    if (phase == RecordControl::kDrain && !draining) {
      draining = true;
      drain_start = Clock::now();
      for (auto& c : cpus) c.last_data = drain_start;
    }
    bool read_any = false;
    for (auto& c : cpus) {
      for (int i = 0; i < kReadsPerTurn && !c.done; ++i) {
        auto got = c.r->read_into(base, kReadSize);
        if (got == CpuRecorder::ReadResult::kData) {
          read_any = true;
          c.last_data = Clock::now();
          continue;
        }
        if (got == CpuRecorder::ReadResult::kDone) c.done = true;
        else if (draining) {
          const auto now = Clock::now();
          c.done = now - c.last_data >= kQuiet || now - drain_start >= kDrainLimit;
        }
        break;
      }
    }
    if (std::all_of(cpus.begin(), cpus.end(), [](const Cpu& c) { return c.done; })) break;
    if (read_any) continue;
    pfds.clear();
    for (const auto& c : cpus)
      if (!c.done) pfds.push_back({c.r->fd(), POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), draining ? 50 : 100);
  }
}

}  // namespace eventfs::recorder
