// PendingCpuRing: the ring of a CPU the kernel has none for yet (offline
// since the instance was made) reads as empty, looks for the real ring at
// most once per retry interval, and passes everything on to it once found.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "ring/pending_ring.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using namespace std::chrono_literals;
using testing::CollectSink;

// A ring that delivers one record per drain and remembers what it was told.
class FakeRing final : public CpuRing {
 public:
  Result<std::size_t> drain(RingSink& sink, std::size_t max) override {
    if (max == 0) return std::size_t{0};
    const std::uint8_t rec[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    sink.record(++ts, rec, sizeof rec);
    return std::size_t{1};
  }
  int poll_fd() const override { return 42; }
  void count_losses_from(std::uint64_t overrun) override { losses_from = overrun; }
  const char* mode() const override { return "fake"; }
  RingStats stats() const override {
    RingStats s;
    s.entries = ts;
    return s;
  }
  int cpu() const override { return 3; }
  std::uint32_t subbuf_size() const override { return 4096; }
  bool settled() const override { return settled_now; }

  std::uint64_t ts = 0;
  bool settled_now = true;
  std::optional<std::uint64_t> losses_from;
};

// An opener that reports `absent_times` absences, then hands out `ring`
// (or, with `fail`, an error that is not an absence).
Error fail_with(int code, std::string reason) { return fail(code, std::move(reason)); }

struct Opener {
  int calls = 0;
  int absent_times = 0;
  bool fail = false;
  FakeRing* made = nullptr;
  PendingCpuRing::Opener fn() {
    return [this]() -> Result<std::unique_ptr<CpuRing>> {
      ++calls;
      if (calls <= absent_times) return std::unique_ptr<CpuRing>();  // (no ring yet)
      if (fail) return fail_with(EACCES, "cannot open");
      auto r = std::make_unique<FakeRing>();
      made = r.get();
      return std::unique_ptr<CpuRing>(std::move(r));
    };
  }
};

TEST(PendingCpuRing, ReadsAsAnEmptyRingUntilTheKernelMakesOneThenPassesEverythingOn) {
  Opener o;
  o.absent_times = 2;
  PendingCpuRing ring(3, o.fn(), 0ms);
  ring.count_losses_from(17);  // (before the first drain, as the hub does)
  CollectSink sink;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ring.drain(sink, 100).value(), 0u);
    EXPECT_FALSE(ring.has_ring());
    EXPECT_EQ(ring.poll_fd(), -1);
    EXPECT_STREQ(ring.mode(), "offline");
    EXPECT_EQ(ring.stats().entries, 0u);
    EXPECT_EQ(ring.subbuf_size(), 0u);
    EXPECT_TRUE(ring.settled());  // (nothing to deliver)
  }
  EXPECT_EQ(ring.cpu(), 3);
  EXPECT_TRUE(sink.items.empty());
  EXPECT_EQ(o.calls, 2);

  EXPECT_EQ(ring.drain(sink, 100).value(), 1u);  // the third look finds it
  ASSERT_NE(o.made, nullptr);
  EXPECT_EQ(o.calls, 3);
  EXPECT_TRUE(ring.has_ring());
  EXPECT_EQ(ring.poll_fd(), 42);
  EXPECT_STREQ(ring.mode(), "fake");
  EXPECT_EQ(ring.subbuf_size(), 4096u);
  EXPECT_TRUE(ring.settled());
  o.made->settled_now = false;
  EXPECT_FALSE(ring.settled());
  EXPECT_EQ(o.made->losses_from, std::optional<std::uint64_t>(17)) << "the loss baseline was not passed on";
  EXPECT_EQ(ring.drain(sink, 100).value(), 1u);
  EXPECT_EQ(o.calls, 3) << "opened again once it had the ring";
  EXPECT_EQ(ring.stats().entries, 2u);
  EXPECT_EQ(sink.items.size(), 2u);
  ring.count_losses_from(5);
  EXPECT_EQ(o.made->losses_from, std::optional<std::uint64_t>(5));
}

TEST(PendingCpuRing, LooksForTheRingAtMostOncePerRetryInterval) {
  Opener o;
  o.absent_times = 1000;
  CollectSink sink;
  PendingCpuRing slow(0, o.fn(), 10h);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(slow.drain(sink, 10).value(), 0u);
  EXPECT_EQ(o.calls, 1) << "looked again within the interval";

  Opener o2;
  o2.absent_times = 1000;
  PendingCpuRing ring(0, o2.fn(), 50ms);
  EXPECT_EQ(ring.drain(sink, 10).value(), 0u);
  EXPECT_EQ(o2.calls, 1);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(ring.drain(sink, 10).value(), 0u);
  EXPECT_EQ(o2.calls, 2) << "did not look again after the interval";
}

TEST(PendingCpuRing, AnOpenThatFailsForAnotherReasonIsAnErrorAndTriedAgain) {
  Opener o;
  o.fail = true;
  PendingCpuRing ring(1, o.fn(), 0ms);
  CollectSink sink;
  Result<std::size_t> first = ring.drain(sink, 10);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.code(), EIO);
  EXPECT_EQ(first.reason(), "cannot open") << "the opener's reason was lost";
  EXPECT_EQ(ring.drain(sink, 10).code(), EIO);
  EXPECT_EQ(o.calls, 2);
  o.fail = false;
  Result<std::size_t> opened = ring.drain(sink, 10);
  ASSERT_TRUE(opened) << "an error was kept past the open: " << opened.reason();
  EXPECT_EQ(*opened, 1u);
  EXPECT_STREQ(ring.mode(), "fake");
}

}  // namespace
}  // namespace eventfs
