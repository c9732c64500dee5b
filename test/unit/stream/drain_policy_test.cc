// DrainPolicy: when a drainer reads its ring, how long it sleeps, on which
// descriptors, and when it tells the readers, driven turn by turn with a
// clock of the test's own (no threads, no descriptors).
#include "stream/drain_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace eventfs {
namespace {

using namespace std::chrono_literals;
using Clock = DrainPolicy::Clock;
using Wait = DrainPolicy::Wait;
using Polled = DrainPolicy::Polled;
using Drained = DrainPolicy::Drained;
constexpr std::size_t kBatch = 4096;

// What the drainer did in a turn.
struct Turn {
  Wait wait;             // what it polled, before the turn
  bool drained = false;  // it read the ring
  bool told = false;     // it told the readers
};

// A drainer's turns on a clock of its own: each turn polls as the policy
// says, and (unless told otherwise) sleeps the whole timeout.
class Drainer {
 public:
  explicit Drainer(bool has_readiness = true) : policy(now, has_readiness) {}

  // One turn: the wait the policy asks for, the clock moved on by `slept`
  // (by default the whole timeout; poll() timed out unless something was
  // ready), then a drain that gives `d` if the policy asks for one.
  Turn turn(const Drained& d = empty(), Polled p = {}, std::optional<Clock::duration> slept = std::nullopt,
            bool staged = false) {
    Turn t;
    t.wait = policy.wait(now, staged);
    now += slept ? *slept : Clock::duration(std::chrono::milliseconds(t.wait.timeout_ms));
    p.timed_out = !p.ring_ready && !p.written;
    t.drained = policy.woke(now, p);
    if (t.drained) policy.drained(d);
    t.told = policy.end_turn();
    return t;
  }
  // Turns until the policy waits for the readiness (at most `limit`);
  // returns how many timed sweeps that took.
  int sweeps_until_idle(int limit = 100) {
    int sweeps = 0;
    while (!policy.idle() && sweeps < limit) {
      Turn t = turn();
      if (t.drained) ++sweeps;
    }
    return sweeps;
  }

  static Drained empty() { return Drained{.got = 0, .batch = kBatch}; }
  static Drained records(int n) {
    return Drained{.got = static_cast<std::size_t>(n), .batch = kBatch, .added = static_cast<std::size_t>(n)};
  }

  Clock::time_point now{100s};  // (far from the clock's epoch)
  DrainPolicy policy;
};

TEST(DrainPolicy, ANewSessionDrainsAtOnce) {
  Drainer d;
  Wait w = d.policy.wait(d.now, false);
  EXPECT_EQ(w.timeout_ms, 0);
  EXPECT_TRUE(d.policy.woke(d.now, {}));
}

TEST(DrainPolicy, AFullBatchDrainsAgainAtOnce) {
  Drainer d;
  Turn t = d.turn(Drainer::records(kBatch), {}, 0ms);
  ASSERT_TRUE(t.drained);
  Wait w = d.policy.wait(d.now, false);
  EXPECT_EQ(w.timeout_ms, 0) << "a ring that gave a full batch has more: read again without sleeping";
  EXPECT_TRUE(d.policy.woke(d.now, {.timed_out = true}));
  d.policy.drained(Drainer::records(10));
  d.policy.end_turn();
  EXPECT_GT(d.policy.wait(d.now, false).timeout_ms, 0) << "a ring that gave less is caught up";
}

TEST(DrainPolicy, CaughtUpRestsAndIgnoresTheRingsReadinessMeanwhile) {
  Drainer d;
  ASSERT_TRUE(d.turn(Drainer::records(10), {}, 0ms).drained);
  Wait w = d.policy.wait(d.now, false);
  EXPECT_FALSE(w.ring) << "the ring's descriptor is polled during the rest";
  EXPECT_EQ(w.timeout_ms, DrainPolicy::kRestMs);
  // Still resting a moment later: not polled, and no drain before the sweep.
  d.now += 500us;
  EXPECT_FALSE(d.policy.wait(d.now, false).ring);
  // After the rest: polled again, and its readiness drains at once.
  d.now += 500us;
  w = d.policy.wait(d.now, false);
  EXPECT_TRUE(w.ring);
  EXPECT_TRUE(d.policy.woke(d.now, {.ring_ready = true}));
  d.policy.drained(Drainer::records(5));
  d.policy.end_turn();
  EXPECT_FALSE(d.policy.wait(d.now, false).ring) << "each catch-up rests again";
}

TEST(DrainPolicy, ASweepThatFindsNothingDoesNotRest) {
  Drainer d(false);
  d.turn(Drainer::empty(), {}, 0ms);
  Wait w = d.policy.wait(d.now, false);
  EXPECT_TRUE(w.ring);
  EXPECT_EQ(w.timeout_ms, DrainPolicy::kPollMs);
}

TEST(DrainPolicy, EmptySweepsDoubleTheIntervalUpToIdlePoll) {
  Drainer d(false);  // (no readiness: it never goes idle)
  d.turn(Drainer::empty(), {}, 0ms);
  EXPECT_EQ(d.policy.interval(), std::chrono::milliseconds(DrainPolicy::kPollMs));
  std::chrono::milliseconds expect{DrainPolicy::kPollMs};
  for (int i = 0; i < 6; ++i) {
    Turn t = d.turn();
    EXPECT_EQ(t.wait.timeout_ms, expect.count()) << "sweep " << i;
    ASSERT_TRUE(t.drained) << "a due sweep reads the ring";
    expect = std::min(expect * 2, std::chrono::milliseconds(DrainPolicy::kIdlePollMs));
    EXPECT_EQ(d.policy.interval(), expect) << "after sweep " << i;
  }
  EXPECT_EQ(d.policy.interval(), std::chrono::milliseconds(DrainPolicy::kIdlePollMs));
  EXPECT_FALSE(d.policy.idle());
}

// While no reader waits for news, records coming are swept a quarter as
// often; the kernel's readiness still drains at once. A reader that comes
// to wait brings the sweeps back to kPollMs.
TEST(DrainPolicy, SweepsAreFewerWhileNoReaderWaits) {
  Drainer d(false);
  d.policy.set_watched(false);
  d.turn(Drainer::records(10), {}, 0ms);
  // (The rest after the catch-up, then the sweep.)
  Turn rest = d.turn(Drainer::records(10));
  EXPECT_FALSE(rest.drained) << "the rest's end is no sweep";
  Turn t = d.turn(Drainer::records(10));
  EXPECT_EQ(t.wait.timeout_ms, DrainPolicy::kUnwatchedPollMs - DrainPolicy::kRestMs);
  EXPECT_TRUE(t.drained);
  EXPECT_EQ(d.policy.sweep_interval(), std::chrono::milliseconds(DrainPolicy::kUnwatchedPollMs));
  Turn early = d.turn(Drainer::records(10), {}, 10ms);
  EXPECT_FALSE(early.drained) << "a wakeup 10 ms after the sweep is no sweep while no reader waits";
  Turn ready = d.turn(Drainer::records(10), {.ring_ready = true}, 2ms);
  EXPECT_TRUE(ready.drained) << "the ring's readiness is not held back";
  d.policy.set_watched(true);
  EXPECT_EQ(d.policy.sweep_interval(), std::chrono::milliseconds(DrainPolicy::kPollMs));
  d.turn(Drainer::records(10));  // (the rest)
  EXPECT_LE(d.policy.wait(d.now, false).timeout_ms, DrainPolicy::kPollMs);
}

TEST(DrainPolicy, RecordsResetTheIntervalToPoll) {
  Drainer d(false);
  d.turn(Drainer::empty(), {}, 0ms);
  for (int i = 0; i < 3; ++i) d.turn();
  ASSERT_EQ(d.policy.interval(), std::chrono::milliseconds(DrainPolicy::kIdlePollMs));
  Turn t = d.turn(Drainer::records(3));
  ASSERT_TRUE(t.drained);
  EXPECT_EQ(d.policy.interval(), std::chrono::milliseconds(DrainPolicy::kPollMs));
}

TEST(DrainPolicy, ASweepSoonAfterTheRingsReadinessReadsNothing) {
  Drainer d(false);
  d.turn(Drainer::empty(), {}, 0ms);
  // The ring said it was ready: read, then the rest.
  ASSERT_TRUE(d.turn(Drainer::records(10), {.ring_ready = true}, 2ms).drained);
  const Clock::time_point ready_at = d.now;
  EXPECT_FALSE(d.turn().drained);  // (the rest's end)
  // The sweep due next comes within two intervals of the readiness: it
  // reads nothing (and, finding nothing, the interval doubles).
  Turn t = d.turn();
  ASSERT_EQ(d.policy.interval(), std::chrono::milliseconds(2 * DrainPolicy::kPollMs)) << "no sweep came";
  EXPECT_FALSE(t.drained) << "a sweep at the writer's heels";
  // Once two intervals have passed since the readiness, a sweep reads.
  for (int i = 0; i < 10 && !(t = d.turn()).drained; ++i) {
  }
  EXPECT_TRUE(t.drained);
  EXPECT_GE(d.now - ready_at, 2 * d.policy.interval());
}

TEST(DrainPolicy, AfterTwoEmptySweepsWithAReadinessItGoesIdle) {
  Drainer d;
  d.turn(Drainer::empty(), {}, 0ms);
  EXPECT_EQ(d.sweeps_until_idle(), 2);
  ASSERT_TRUE(d.policy.idle());
  Wait w = d.policy.wait(d.now, false);
  EXPECT_TRUE(w.readiness);
  EXPECT_EQ(w.timeout_ms, DrainPolicy::kIdleWaitMs) << "idle: no more sweeps";
  // A second with no record anywhere: one sweep, and idle again at once.
  Turn t = d.turn();
  EXPECT_TRUE(t.drained);
  EXPECT_TRUE(d.policy.idle());
  // Records: sweeps again, then two empty ones before it is idle.
  t = d.turn(Drainer::records(3), {.written = true}, 3ms);
  EXPECT_TRUE(t.drained);
  EXPECT_FALSE(d.policy.idle());
  EXPECT_FALSE(d.policy.wait(d.now, false).readiness) << "the readiness is waited for only when idle";
  EXPECT_NE(d.policy.wait(d.now, false).timeout_ms, DrainPolicy::kIdleWaitMs);
  EXPECT_EQ(d.sweeps_until_idle(), 2);
}

TEST(DrainPolicy, WithoutAReadinessItKeepsSweeping) {
  Drainer d(false);
  d.turn(Drainer::empty(), {}, 0ms);
  EXPECT_EQ(d.sweeps_until_idle(20), 20);
  EXPECT_FALSE(d.policy.wait(d.now, false).readiness);
  EXPECT_EQ(d.policy.wait(d.now, false).timeout_ms, DrainPolicy::kIdlePollMs);
}

// A CPU with no ring yet goes idle after two sweeps, with or without a
// readiness descriptor, and then waits a second, never for the readiness
// (up while another CPU's records are unread, it would wake it at every
// sweep's pace).
TEST(DrainPolicy, ACpuWithNoRingYetGoesIdleAndWaitsASecondNotForTheReadiness) {
  for (bool has_readiness : {false, true}) {
    Drainer d(has_readiness);
    Drained none = Drainer::empty();
    none.has_ring = false;
    d.turn(none, {}, 0ms);
    int sweeps = 0;
    while (!d.policy.idle() && sweeps < 10)
      if (d.turn(none).drained) ++sweeps;
    EXPECT_EQ(sweeps, 2) << "readiness " << has_readiness;
    Wait w = d.policy.wait(d.now, false);
    EXPECT_FALSE(w.readiness) << "readiness " << has_readiness;
    EXPECT_EQ(w.timeout_ms, DrainPolicy::kIdleWaitMs) << "readiness " << has_readiness;
  }
}

TEST(DrainPolicy, ARingNotSettledOrRecordsStagedKeepItSweeping) {
  for (int which = 0; which < 2; ++which) {
    Drainer d;
    Drained busy = Drainer::empty();
    (which == 0 ? busy.settled : busy.staging_empty) = false;
    d.turn(busy, {}, 0ms);
    for (int i = 0; i < 10; ++i) d.turn(busy);
    EXPECT_FALSE(d.policy.idle()) << (which == 0 ? "not settled" : "staged");
  }
}

TEST(DrainPolicy, StagedRecordsAreRetriedSoon) {
  Drainer d(false);
  d.turn(Drainer::empty(), {}, 0ms);
  EXPECT_EQ(d.policy.wait(d.now, true).timeout_ms, DrainPolicy::kStagedRetryMs);
  EXPECT_EQ(d.policy.wait(d.now, false).timeout_ms, DrainPolicy::kPollMs);
}

TEST(DrainPolicy, AReadinessWakeupThatFindsNothingRaisesTheSweepsNeeded) {
  Drainer d;
  d.turn(Drainer::empty(), {}, 0ms);
  ASSERT_EQ(d.sweeps_until_idle(), 2);
  // Woken by another CPU's records: nothing here.
  Turn t = d.turn(Drainer::empty(), {.written = true}, 3ms);
  ASSERT_TRUE(t.drained) << "a readiness wakeup reads the ring";
  EXPECT_FALSE(d.policy.idle());
  EXPECT_EQ(d.policy.useless(), 1);
  EXPECT_EQ(d.policy.wait(d.now, false).timeout_ms, DrainPolicy::kIdlePollMs)
      << "the wakeup counts as a sweep: the next one is an interval later";
  EXPECT_EQ(d.sweeps_until_idle(), 3);
  // Again: 5 sweeps, then 9, ... up to 65.
  d.turn(Drainer::empty(), {.written = true}, 3ms);
  EXPECT_EQ(d.sweeps_until_idle(), 5);
  for (int i = 0; i < 10; ++i) {
    d.turn(Drainer::empty(), {.written = true}, 3ms);
    d.sweeps_until_idle();
  }
  EXPECT_EQ(d.policy.sweeps_before_idle(), 65);
  // A wakeup that finds records here starts over.
  d.turn(Drainer::records(4), {.written = true}, 3ms);
  EXPECT_EQ(d.policy.useless(), 0);
  EXPECT_EQ(d.sweeps_until_idle(), 2);
}

TEST(DrainPolicy, AnIdleSecondWithNoRecordAnywhereStartsOver) {
  Drainer d;
  d.turn(Drainer::empty(), {}, 0ms);
  d.sweeps_until_idle();
  d.turn(Drainer::empty(), {.written = true}, 3ms);
  ASSERT_EQ(d.sweeps_until_idle(), 3);
  d.turn();  // the whole kIdleWaitMs, poll() timed out
  EXPECT_EQ(d.policy.useless(), 0);
}

TEST(DrainPolicy, ReadersAreToldEveryNotifyRecordsInAStorm) {
  Drainer d;
  const std::size_t turns = DrainPolicy::kNotifyRecords / kBatch;
  ASSERT_GT(turns, 1u);
  for (std::size_t i = 1; i < turns; ++i) {
    Turn t = d.turn(Drainer::records(kBatch), {}, 0ms);
    ASSERT_TRUE(t.drained);
    EXPECT_FALSE(t.told) << "told after " << i * kBatch << " records, still behind";
  }
  Turn t = d.turn(Drainer::records(kBatch), {}, 0ms);
  EXPECT_TRUE(t.told) << "not told after " << DrainPolicy::kNotifyRecords << " records";
  EXPECT_EQ(d.policy.untold(), 0u);
  t = d.turn(Drainer::records(kBatch), {}, 0ms);
  EXPECT_FALSE(t.told);
  EXPECT_EQ(d.policy.untold(), kBatch);
}

TEST(DrainPolicy, ReadersAreToldWhenTheRingIsCaughtUp) {
  Drainer d;
  Turn t = d.turn(Drainer::records(kBatch), {}, 0ms);
  EXPECT_FALSE(t.told);
  t = d.turn(Drainer::records(7), {}, 0ms);
  EXPECT_TRUE(t.told) << "caught up with records queued";
  EXPECT_EQ(d.policy.untold(), 0u);
  t = d.turn();
  EXPECT_FALSE(t.told) << "nothing new to tell";
}

}  // namespace
}  // namespace eventfs
