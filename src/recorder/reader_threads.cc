#include "recorder/reader_threads.h"

#include "recorder/read_pacing.h"

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <system_error>

namespace eventfs::recorder {
namespace {

using Clock = std::chrono::steady_clock;

// After the events are let go, a CPU's stream is done once a record from
// the recording's end on came (everything before it has), or once it has
// stayed empty kQuiet with nothing unread in the kernel's ring or eventfs's
// queue (a CPU with no record since the end); and at the latest
// ReaderThreads::kDrainLimit after the drain began.
constexpr auto kQuiet = std::chrono::milliseconds(150);
constexpr auto kDrainLimit = ReaderThreads::kDrainLimit;
// Reads of one CPU in a row before the thread's next CPU gets its turn.
constexpr int kReadsPerTurn = 4;

}  // namespace

ReaderThreads::ReaderThreads(std::vector<CpuRecorder*> cpus, RecordControl& control, std::optional<int> nice)
    : cpus_(std::move(cpus)), control_(control), nice_(nice) {}

Status ReaderThreads::start() {
  const std::size_t n = std::min(kMaxThreads, (cpus_.size() + kCpusPerThread - 1) / kCpusPerThread);
  // Each thread counts down once it has its nice value (or was refused it),
  // so that nice_refused() is known when start() returns. The latch lives
  // as long as the threads: a count_down() may still touch it after the
  // wait() it ends has returned.
  placed_ = std::make_unique<std::latch>(static_cast<std::ptrdiff_t>(n));
  std::latch& placed = *placed_;
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<CpuRecorder*> mine;
    for (std::size_t i = t; i < cpus_.size(); i += n) mine.push_back(cpus_[i]);
    try {
      threads_.emplace_back([this, &placed, mine = std::move(mine)] {
        if (nice_ && ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), *nice_) != 0) {
          int expected = 0;
          nice_refused_.compare_exchange_strong(expected, errno);
        }
        placed.count_down();
        run(mine);
      });
    } catch (const std::system_error& e) {
      control_.phase = RecordControl::kStop;
      placed.count_down(static_cast<std::ptrdiff_t>(n - t));
      placed.wait();
      join();
      return fail(e.code().value(), e.what());
    }
  }
  placed.wait();
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
  // 8-aligned, as records are. Not zeroed: FUSE faults a read's whole
  // buffer in anyway, once, at the first read.
  auto buf = std::make_unique_for_overwrite<std::uint64_t[]>(kReadSize / 8);
  auto* base = reinterpret_cast<unsigned char*>(buf.get());
  struct Cpu {
    CpuRecorder* r;
    Clock::time_point last_data;
    bool done = false;
    std::size_t since_caught_up = 0;  // bytes read since the streams were all empty
  };
  ReadPacing pacing;
  std::vector<Cpu> cpus;
  for (CpuRecorder* r : mine) cpus.push_back({r, Clock::now()});
  std::vector<pollfd> pfds;
  bool draining = false;
  Clock::time_point drain_start{};
  std::size_t largest = 0;  // the most one read has carried
  for (;;) {
    const int phase = control_.phase.load();
    if (phase == RecordControl::kStop) break;
    if (phase == RecordControl::kDrain && !draining) {
      draining = true;
      drain_start = Clock::now();
      for (auto& c : cpus) c.last_data = drain_start;
    }
    bool read_any = false, behind = false;
    for (auto& c : cpus) {
      for (int i = 0; i < kReadsPerTurn && !c.done; ++i) {
        auto got = c.r->read_into(base, kReadSize);
        if (got == CpuRecorder::ReadResult::kData) {
          read_any = true;
          c.since_caught_up += c.r->last_read();
          c.last_data = Clock::now();
          if (draining && c.r->past_end()) c.done = true;
          // eventfs answers with all it has, up to what one read can carry
          // (the read's size, or less where FUSE's requests are smaller: the
          // largest read so far tells): a read well short of that emptied
          // the stream's queue.
          largest = std::max(largest, c.r->last_read());
          if (c.r->last_read() < largest - largest / 4) break;
          behind = true;
          continue;
        }
        if (got == CpuRecorder::ReadResult::kDone) c.done = true;
        else if (draining) {
          const auto now = Clock::now();
          if (now - drain_start >= kDrainLimit) {
            c.done = true;
            c.r->ended_unread(!c.r->nothing_unread());
          } else {
            c.done = now - c.last_data >= kQuiet && c.r->nothing_unread();
          }
        }
        break;
      }
    }
    if (std::all_of(cpus.begin(), cpus.end(), [](const Cpu& c) { return c.done; })) break;
    if (behind || (read_any && (draining || control_.phase.load() != RecordControl::kRecord))) continue;
    std::size_t most = 0;
    for (auto& c : cpus) {
      most = std::max(most, c.since_caught_up);
      c.since_caught_up = 0;
    }
    pacing.caught_up(Clock::now(), most);
    if (read_any) {
      // Every stream gave what it had: records are coming, so let more
      // gather (read_pacing.h) and read again, without asking whether they
      // are there first (poll(2) on a stream is a FUSE round trip too, and
      // so is a read that finds nothing).
      std::this_thread::sleep_for(pacing.wait());
      continue;
    }
    pfds.clear();
    for (const auto& c : cpus)
      if (!c.done) pfds.push_back({c.r->fd(), POLLIN, 0});
    const int ready = ::poll(pfds.data(), pfds.size(), draining ? 50 : 100);
    // Records are there: let more gather before the read (read_pacing.h),
    // except at the end, when what is left is read at once.
    if (ready > 0 && !draining && control_.phase.load() == RecordControl::kRecord)
      std::this_thread::sleep_for(pacing.wait());
  }
}

}  // namespace eventfs::recorder
