// The record path's hub when the kernel's rings cannot be read: stream
// readers are told (EIO, a POLLERR poll) instead of waiting forever, and the
// reason is reported once; and when they have nothing to give: their
// readers wait for the instance's readiness; and how often a drainer sweeps
// its ring, by whether a reader waits. Runs over a directory with no
// per_cpu/ in it, or over fake rings.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>
#include <chrono>
#include <thread>

#include "support/fixture_kernels.h"
#include "support/time_scale.h"
#include "fs/stream_file.h"
#include "stream/cpu_drainer.h"
#include "stream/stream_hub.h"

namespace eventfs {
namespace {

using testing::ResolvedFixture;
using namespace std::chrono_literals;

class Completion final : public ReadCompletion {
 public:
  Completion(std::atomic<int>& err, std::atomic<bool>& answered) : err_(err), answered_(answered) {}
  void done(int err, std::string_view) override {
    err_ = err;
    answered_ = true;
  }
  bool interrupted() const override { return false; }
  const void* key() const override { return this; }

 private:
  std::atomic<int>& err_;
  std::atomic<bool>& answered_;
};

bool wait_for(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!flag && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  return flag;
}

TEST(StreamHub, ReadersGetEioWhenTheRingsCannotBeOpened) {
  ResolvedFixture fx("linux-6.18");
  char dir[] = "/tmp/eventfs-hub-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    StreamHub hub(RingFiles(dir), 2, fx.resolution, ReaderMode::Read);
    auto file = std::make_shared<StreamFile>(hub.text_channel());
    hub.on_data([file] { file->data_ready(); });
    std::atomic<int> reports{0};
    std::string reason;
    hub.on_ring_error([&](const std::string& why) {
      if (reports++ == 0) reason = why;
    });
    hub.start();

    std::unique_ptr<OpenFile> f;
    ASSERT_EQ(file->open(O_RDONLY, f), 0);
    std::atomic<int> err{-1};
    std::atomic<bool> answered{false};
    f->read_async(0, 4096, false, std::make_unique<Completion>(err, answered));
    ASSERT_TRUE(wait_for(answered, 3s)) << "a blocked reader was never told";
    EXPECT_EQ(err, EIO);
    EXPECT_EQ(reports, 1);
    EXPECT_NE(reason.find("trace_pipe_raw"), std::string::npos) << reason;

    // Later reads, blocking or not, and polls get the error at once.
    std::atomic<bool> again{false};
    f->read_async(0, 4096, false, std::make_unique<Completion>(err, again));
    EXPECT_TRUE(again);
    EXPECT_EQ(err, EIO);
    EXPECT_EQ(f->poll(nullptr) & POLLERR, static_cast<unsigned>(POLLERR));
    f.reset();
    hub.stop();
  }
  rmdir(dir);
}

// A ring with nothing in it that counts its drains; with `fails`, one whose
// every drain fails (and says why if `why` is not empty); `settled` (if
// given) says whether it has records the kernel's readiness would not
// announce.
class FakeRing final : public CpuRing {
 public:
  FakeRing(int cpu, bool fails, std::atomic<int>& drains, std::string why = "",
           const std::atomic<bool>* settled = nullptr)
      : cpu_(cpu), fails_(fails), drains_(drains), why_(std::move(why)), settled_(settled) {}
  Result<std::size_t> drain(RingSink&, std::size_t) override {
    ++drains_;
    if (fails_) return fail(EIO, why_);
    return std::size_t{0};
  }
  int poll_fd() const override { return -1; }
  void count_losses_from(std::uint64_t) override {}
  const char* mode() const override { return "fake"; }
  RingStats stats() const override { return {}; }
  int cpu() const override { return cpu_; }
  std::uint32_t subbuf_size() const override { return 4096; }
  bool settled() const override { return !settled_ || *settled_; }

 private:
  int cpu_;
  bool fails_;
  std::atomic<int>& drains_;
  std::string why_;
  const std::atomic<bool>* settled_;
};

// A ring that cannot be read once open is not silent: reported once per
// session (the drains go on, every few milliseconds), with the ring's own
// reason where it has one.
TEST(StreamHub, AnOpenRingThatCannotBeReadIsReportedOncePerSession) {
  ResolvedFixture fx("linux-6.18");
  StreamHub hub(RingFiles("/nonexistent"), 2, fx.resolution, ReaderMode::Read);
  std::atomic<int> drains{0};
  hub.set_ring_opener([&](int cpu) -> Result<std::unique_ptr<CpuRing>> {
    return std::unique_ptr<CpuRing>(std::make_unique<FakeRing>(cpu, true, drains, cpu == 1 ? "sub-buffer 3 runs past its end" : ""));
  });
  std::mutex mu;
  std::vector<std::string> reports;
  hub.on_ring_error([&](const std::string& why) {
    std::lock_guard lock(mu);
    reports.push_back(why);
  });
  auto count = [&] {
    std::lock_guard lock(mu);
    return reports.size();
  };
  hub.start();
  auto file = std::make_shared<StreamFile>(hub.cpu_channel(1));
  for (std::size_t session = 1; session <= 2; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    std::unique_ptr<OpenFile> f;
    ASSERT_EQ(file->open(O_RDONLY | O_NONBLOCK, f), 0);
    const int before = drains;
    auto end = std::chrono::steady_clock::now() + 5s;
    while (drains < before + 20 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
    EXPECT_GE(drains, before + 20) << "the failing rings were not tried again";
    EXPECT_EQ(count(), 2 * session);
    EXPECT_NE(hub.stats_text(1).find("reader: fake"), std::string::npos) << hub.stats_text(1);
    f.reset();
    end = std::chrono::steady_clock::now() + 5s;
    while (hub.stats_text(1).find("reader: closed") == std::string::npos && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(5ms);
  }
  hub.stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(reports.size(), 4u);
  std::sort(reports.begin(), reports.end());  // (the two CPUs' readers report in either order)
  EXPECT_EQ(reports[0], "cannot read the ring buffer of CPU 0: Input/output error");
  EXPECT_EQ(reports[1], reports[0]);
  EXPECT_EQ(reports[2], "cannot read the ring buffer of CPU 1: sub-buffer 3 runs past its end");
  EXPECT_EQ(reports[3], reports[2]);
}

// A ring that took records from the kernel and has not delivered them all
// when its session ends (spliced sub-buffers not yet walked: not settled)
// is drained until it is, at most kSettleDrains times, before it closes:
// the kernel no longer has those records for the next session.
TEST(StreamHub, ARingNotSettledIsDrainedBeforeItsSessionEnds) {
  ResolvedFixture fx("linux-6.18");
  StreamHub hub(RingFiles("/nonexistent"), 1, fx.resolution, ReaderMode::Read);
  std::atomic<int> drains{0};
  std::atomic<bool> settled{true};
  hub.set_ring_opener([&](int cpu) -> Result<std::unique_ptr<CpuRing>> {
    return std::unique_ptr<CpuRing>(std::make_unique<FakeRing>(cpu, false, drains, "", &settled));
  });
  hub.start();
  auto file = std::make_shared<StreamFile>(hub.cpu_channel(0));
  std::unique_ptr<OpenFile> f;
  ASSERT_EQ(file->open(O_RDONLY | O_NONBLOCK, f), 0);
  auto end = std::chrono::steady_clock::now() + 5s;
  while (drains == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  ASSERT_GT(drains, 0);
  settled = false;  // (and stays so: the drains at the session's end are bounded)
  const int before = drains;
  const auto closed_at = std::chrono::steady_clock::now();
  f.reset();
  end = std::chrono::steady_clock::now() + 5s;
  while (hub.stats_text(0).find("reader: closed") == std::string::npos && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(5ms);
  ASSERT_NE(hub.stats_text(0).find("reader: closed"), std::string::npos);
  const int at_end = drains - before;
  // (Besides, the sweeps of an unsettled ring until the session ended: at
  // most one each kPollMs.)
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - closed_at);
  EXPECT_GE(at_end, CpuDrainer::kSettleDrains) << "the session ended with records taken and not delivered";
  EXPECT_LE(at_end, CpuDrainer::kSettleDrains + 2 + took.count() / DrainPolicy::kPollMs)
      << "the drains at the session's end are not bounded";
  hub.stop();
}

// How many drains the hub's readers make in `span`.
int drains_in(const std::atomic<int>& drains, std::chrono::milliseconds span) {
  const int before = drains;
  std::this_thread::sleep_for(span);
  return drains - before;
}

// Whether the readers come to wait within `limit`: half a second with at
// most two drains. (How soon depends on how fast their sweeps run, which a
// loaded machine slows; a reader that never waits fails.)
bool readers_wait_within(const std::atomic<int>& drains, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + eventfs_it::scaled(limit);
  do {
    if (drains_in(drains, std::chrono::milliseconds(500)) <= 2) return true;
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

// Whether the readers make `n` drains within `limit`.
bool drains_reach(const std::atomic<int>& drains, int n, std::chrono::milliseconds limit) {
  const int before = drains;
  const auto end = std::chrono::steady_clock::now() + limit;
  while (drains - before < n && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return drains - before >= n;
}

// Once their sweeps find nothing, the ring readers wait for the instance's
// readiness (here one end of a socket pair), or a second, instead of
// sweeping every 10 ms. While it stays readable (another CPU's records
// unread) a reader wakes about as often as the sweeps would, never spins; a
// ring that is not settled is swept; the descriptor is closed with the
// rings.
TEST(StreamHub, IdleRingReadersWaitForTheInstancesReadinessInsteadOfSweeping) {
  ResolvedFixture fx("linux-6.18");
  StreamHub hub(RingFiles("/nonexistent"), 2, fx.resolution, ReaderMode::Read);
  std::atomic<int> drains{0};
  std::atomic<bool> settled{true};
  hub.set_ring_opener([&](int cpu) -> Result<std::unique_ptr<CpuRing>> {
    return std::unique_ptr<CpuRing>(std::make_unique<FakeRing>(cpu, false, drains, "", &settled));
  });
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const int kernel_side = pair[1];
  std::atomic<int> opened{0};
  hub.set_readiness_opener([&] {
    ++opened;
    return pair[0];
  });
  hub.start();
  auto file = std::make_shared<StreamFile>(hub.cpu_channel(0));
  std::unique_ptr<OpenFile> f;
  ASSERT_EQ(file->open(O_RDONLY | O_NONBLOCK, f), 0);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(opened, 1);
  EXPECT_GT(drains, 0);
  EXPECT_TRUE(readers_wait_within(drains, 5s)) << "idle readers went on sweeping";
  // They still look, once a second (the kernel's wakeup can miss a lone record).
  const int slept = drains_in(drains, 2100ms);
  EXPECT_GE(slept, 2) << "idle readers never looked again";
  EXPECT_LE(slept, 8);

  // Readable, and left so (another CPU's records unread): each reader looks
  // at its ring about once a sweep, each useless wakeup doubling the sweeps
  // before it waits for the readiness again.
  ASSERT_EQ(send(kernel_side, "x", 1, MSG_NOSIGNAL), 1);
  const int woken = drains_in(drains, 1000ms);
  EXPECT_GE(woken, 2) << "the readers did not wake";
  EXPECT_LE(woken, 2 * (100 + 20)) << "the readers spun on a readiness their rings had no part in";
  char byte;
  ASSERT_EQ(recv(pair[0], &byte, 1, MSG_DONTWAIT), 1);  // (read: the readiness is down)
  // (At most 65 sweeps, 0.8 s on an idle machine, then they wait again.)
  EXPECT_TRUE(readers_wait_within(drains, 5s)) << "the readers did not go back to waiting";

  // A ring that is not settled is swept again.
  settled = false;
  ASSERT_EQ(send(kernel_side, "x", 1, MSG_NOSIGNAL), 1);  // (wakes the readers: they see it)
  std::this_thread::sleep_for(20ms);
  ASSERT_EQ(recv(pair[0], &byte, 1, MSG_DONTWAIT), 1);
  // (Sweeps every 10 ms: 20 drains come within 0.1 s; looks once a second
  // would take 10 s.)
  EXPECT_TRUE(drains_reach(drains, 20, 2s)) << "a ring with records left was not swept";

  // The session ends: the descriptor goes with the rings.
  f.reset();
  auto end = std::chrono::steady_clock::now() + 5s;
  while (hub.stats_text(0).find("reader: closed") == std::string::npos && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(send(kernel_side, "x", 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);
  hub.stop();
  close(kernel_side);
}

// Whether some window of half a second within `limit` sees more drains
// than sweeps kUnwatchedPollMs apart could make (so: the drainer sweeps at
// its own pace, a reader waiting). A loaded machine slows sweeps, never
// speeds them: the limit scales, the count does not.
constexpr int kHalfSecond = 500;
constexpr int kUnwatchedMost = kHalfSecond / DrainPolicy::kUnwatchedPollMs + 2;
bool sweeps_watched_within(const std::atomic<int>& drains, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + eventfs_it::scaled(limit);
  do {
    if (drains_in(drains, std::chrono::milliseconds(kHalfSecond)) > kUnwatchedMost) return true;
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

// While no read or poll waits, a drainer sweeps its ring at most every
// kUnwatchedPollMs (eventfs-record reads on its own time); a blocked read of
// its CPU's stream, or of trace_pipe (news from any CPU), brings it back to
// its own pace, and once that read has gone it slows again. Rings here are
// never settled and empty: they are swept every kIdlePollMs while watched.
TEST(StreamHub, DrainersSweepAtTheirOwnPaceOnlyWhileAReaderWaits) {
  static_assert(DrainPolicy::kIdlePollMs * 3 / 2 < DrainPolicy::kUnwatchedPollMs,
                "the test tells the two paces apart");
  ResolvedFixture fx("linux-6.18");
  StreamHub hub(RingFiles("/nonexistent"), 2, fx.resolution, ReaderMode::Read);
  std::atomic<int> drains[2] = {0, 0};
  const std::atomic<bool> settled{false};
  hub.set_ring_opener([&](int cpu) -> Result<std::unique_ptr<CpuRing>> {
    return std::unique_ptr<CpuRing>(std::make_unique<FakeRing>(cpu, false, drains[cpu], "", &settled));
  });
  hub.start();
  auto cpu0 = std::make_shared<StreamFile>(hub.cpu_channel(0));
  auto text = std::make_shared<StreamFile>(hub.text_channel());
  std::unique_ptr<OpenFile> keep, blocked;
  ASSERT_EQ(cpu0->open(O_RDONLY | O_NONBLOCK, keep), 0);  // (the session, with no reader waiting)
  ASSERT_TRUE(drains_reach(drains[0], 2, 5s));
  for (auto& d : drains) EXPECT_LE(drains_in(d, std::chrono::milliseconds(kHalfSecond)), kUnwatchedMost)
      << "a drainer swept at its own pace with no reader waiting";

  // A blocked read of CPU 0's stream: CPU 0's drainer alone is watched.
  std::atomic<int> err{-1};
  std::atomic<bool> answered{false};
  ASSERT_EQ(cpu0->open(O_RDONLY, blocked), 0);
  blocked->read_async(0, 4096, false, std::make_unique<Completion>(err, answered));
  EXPECT_FALSE(answered);
  EXPECT_TRUE(sweeps_watched_within(drains[0], 5s)) << "a waiting reader did not bring the sweeps back";
  EXPECT_LE(drains_in(drains[1], std::chrono::milliseconds(kHalfSecond)), kUnwatchedMost)
      << "CPU 1's drainer was watched by a reader of CPU 0";
  blocked.reset();  // (the read ends with its open)
  ASSERT_TRUE(wait_for(answered, 3s));
  std::this_thread::sleep_for(100ms);  // (one look of the drainer, after which nothing waits)
  EXPECT_LE(drains_in(drains[0], std::chrono::milliseconds(kHalfSecond)), kUnwatchedMost)
      << "the drainer stayed watched after its reader left";

  // A blocked read of trace_pipe waits for news from every CPU.
  answered = false;
  ASSERT_EQ(text->open(O_RDONLY, blocked), 0);
  blocked->read_async(0, 4096, false, std::make_unique<Completion>(err, answered));
  EXPECT_FALSE(answered);
  for (auto& d : drains) EXPECT_TRUE(sweeps_watched_within(d, 5s)) << "a trace_pipe reader left a drainer unwatched";
  blocked.reset();
  ASSERT_TRUE(wait_for(answered, 3s));
  std::this_thread::sleep_for(100ms);
  for (auto& d : drains) EXPECT_LE(drains_in(d, std::chrono::milliseconds(kHalfSecond)), kUnwatchedMost)
      << "a drainer stayed watched after the trace_pipe reader left";
  keep.reset();
  hub.stop();
}

}  // namespace
}  // namespace eventfs
