// Stream files: reads wait without a thread, are answered by the producer,
// by an interruption or by the end of the mount; O_NONBLOCK and poll.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <string_view>
#include <thread>
#include <vector>

#include "fs/stream_file.h"
#include "support/time_scale.h"

namespace eventfs {
namespace {

// StreamChannel::take() over a queue of units.
bool take_units(std::deque<std::string>& units, std::size_t max, std::string& out) {
  if (units.empty()) return false;
  std::size_t used = 0;
  do {
    used += units.front().size();
    out += units.front();
    units.pop_front();
  } while (!units.empty() && used + units.front().size() <= max);
  return true;
}

class FakeChannel final : public StreamChannel {
 public:
  bool take(std::size_t max, std::string& out) override {
    std::lock_guard lock(mu);
    waiting_at_look = waiting_now;
    taken_into = &out;
    return take_units(units, max, out);
  }
  bool readable() override {
    std::lock_guard lock(mu);
    waiting_at_look = waiting_now;
    return !units.empty();
  }
  void reader_opened() override { ++readers; }
  void reader_closed() override { --readers; }
  void waiting(int delta) override { waiting_now += delta; }
  void reader_parked() override { ++parked; }
  void push(std::string u) {
    std::lock_guard lock(mu);
    units.push_back(std::move(u));
  }
  std::mutex mu;
  std::deque<std::string> units;
  int readers = 0;
  int waiting_now = 0;      // the sum of waiting()'s deltas
  int waiting_at_look = -1;  // waiting_now when readable() last looked
  int parked = 0;            // reader_parked() calls
  const std::string* taken_into = nullptr;  // the buffer take() last filled
};

struct Answer {
  bool answered = false;
  int err = -1;
  std::string data;
  int parts = 0;  // pieces it came in (0: done(), one buffer)
};

class FakeCompletion final : public ReadCompletion {
 public:
  explicit FakeCompletion(Answer& a, bool interrupted = false) : a_(a), interrupted_(interrupted) {}
  void done(int err, std::string_view data) override {
    EXPECT_FALSE(a_.answered) << "answered twice";
    a_ = {true, err, std::string(data)};
  }
  void done_parts(const std::string_view* parts, int n) override {
    EXPECT_FALSE(a_.answered) << "answered twice";
    a_ = {true, 0, {}, n};
    for (int i = 0; i < n; ++i) a_.data.append(parts[i]);
  }
  bool interrupted() const override { return interrupted_; }
  const void* key() const override { return &a_; }

 private:
  Answer& a_;
  bool interrupted_;
};

struct FakeNotifier final : public PollNotifier {
  explicit FakeNotifier(int& n) : count(n) {}
  void notify() override { ++count; }
  int& count;
};

class StreamFileTest : public ::testing::Test {
 protected:
  StreamFileTest() : channel(std::make_shared<FakeChannel>()), file(std::make_shared<StreamFile>(channel)) {}
  std::unique_ptr<OpenFile> open() {
    std::unique_ptr<OpenFile> f;
    EXPECT_EQ(file->open(O_RDONLY, f), 0);
    return f;
  }
  std::shared_ptr<FakeChannel> channel;
  std::shared_ptr<StreamFile> file;
};

TEST_F(StreamFileTest, ReadWithDataIsAnsweredAtOnceWithWholeUnits) {
  auto f = open();
  EXPECT_TRUE(f->is_stream());
  channel->push("line one\n");
  channel->push("line two\n");
  Answer a;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.err, 0);
  EXPECT_EQ(a.data, "line one\nline two\n");
}

// A source that lends its units in place: each unit a part, up to two,
// kept where they are until released; one lease at a time.
class InPlaceChannel final : public StreamChannel {
 public:
  bool take(std::size_t max, std::string& out) override {
    ++copies;
    return take_units(units, max, out);
  }
  bool lease(std::size_t max, Lease& out) override {
    if (!lent.empty()) return false;
    std::size_t used = 0;
    while (!units.empty() && lent.size() < 2 && used + units.front().size() <= max) {
      used += units.front().size();
      lent.push_back(std::move(units.front()));
      units.pop_front();
    }
    out.n = static_cast<int>(lent.size());
    for (int i = 0; i < out.n; ++i) out.parts[i] = lent[static_cast<std::size_t>(i)];
    return out.n > 0;
  }
  void release(const Lease&) override {
    ++releases;
    lent.clear();
  }
  bool readable() override { return !units.empty(); }
  std::deque<std::string> units, lent;
  int copies = 0, releases = 0;
};

// Whole units short of the read, answered from where the source keeps them
// (the waiting reader too); a unit larger than the read goes the copying
// way, and its rest stays with the open.
TEST(StreamFileInPlace, WholeUnitsShortOfTheReadAreAnsweredInPlace) {
  auto channel = std::make_shared<InPlaceChannel>();
  auto file = std::make_shared<StreamFile>(channel);
  std::unique_ptr<OpenFile> f;
  ASSERT_EQ(file->open(O_RDONLY, f), 0);
  channel->units = {"aaaa", "bbbb", "cccc"};
  Answer a;
  f->read_async(0, 8, false, std::make_unique<FakeCompletion>(a));
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.data, "aaaa") << "never exactly the read's size: the kernel would send the next request";
  EXPECT_EQ(a.parts, 1);
  Answer b;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(b));
  EXPECT_EQ(b.data, "bbbbcccc");
  EXPECT_EQ(b.parts, 2);
  Answer w;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(w));
  EXPECT_FALSE(w.answered);
  channel->units = {"dddd"};
  file->data_ready();
  ASSERT_TRUE(w.answered);
  EXPECT_EQ(w.data, "dddd");
  EXPECT_EQ(w.parts, 1);
  const int copies = channel->copies;
  channel->units = {"0123456789"};
  Answer c, d;
  f->read_async(0, 4, false, std::make_unique<FakeCompletion>(c));
  f->read_async(4, 100, false, std::make_unique<FakeCompletion>(d));
  EXPECT_EQ(c.data, "0123");
  EXPECT_EQ(c.parts, 0);
  EXPECT_EQ(d.data, "456789");
  EXPECT_EQ(d.parts, 0) << "the open's rest, not the source's";
  EXPECT_EQ(channel->copies, copies + 1);
  EXPECT_EQ(channel->releases, 3) << "each lease released once";
  EXPECT_TRUE(channel->lent.empty());
}

// The reply of a lease is sent with the stream file's lock released (another
// reader of the file goes on meanwhile, and takes a copy: the lease is still
// out) and the lease released after it.
class ReplyingWhileLeased final : public ReadCompletion {
 public:
  ReplyingWhileLeased(InPlaceChannel& ch, OpenFile& other, Answer& mine, Answer& others, bool& lent_during_reply)
      : ch_(ch), other_(other), mine_(mine), others_(others), lent_during_reply_(lent_during_reply) {}
  void done(int err, std::string_view data) override { mine_ = {true, err, std::string(data)}; }
  void done_parts(const std::string_view* parts, int n) override {
    mine_ = {true, 0, {}, n};
    for (int i = 0; i < n; ++i) mine_.data.append(parts[i]);
    lent_during_reply_ = !ch_.lent.empty();
    auto read = std::async(std::launch::async, [this] {
      other_.read_async(0, 100, false, std::make_unique<FakeCompletion>(others_));
    });
    if (read.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      std::fprintf(stderr, "a read of the same file waited for a reply in progress: a lock is held\n");
      std::abort();
    }
  }
  bool interrupted() const override { return false; }
  const void* key() const override { return this; }

 private:
  InPlaceChannel& ch_;
  OpenFile& other_;
  Answer& mine_;
  Answer& others_;
  bool& lent_during_reply_;
};

TEST(StreamFileInPlace, ALeaseIsSentWithNoLockHeldAndReleasedAfter) {
  auto channel = std::make_shared<InPlaceChannel>();
  auto file = std::make_shared<StreamFile>(channel);
  std::unique_ptr<OpenFile> f, g;
  ASSERT_EQ(file->open(O_RDONLY, f), 0);
  ASSERT_EQ(file->open(O_RDONLY, g), 0);
  channel->units = {"aaaa", "bbbb", "cccc"};
  Answer mine, others;
  bool lent_during_reply = false;
  f->read_async(0, 9, false, std::make_unique<ReplyingWhileLeased>(*channel, *g, mine, others, lent_during_reply));
  EXPECT_EQ(mine.data, "aaaabbbb");
  EXPECT_EQ(mine.parts, 2);
  EXPECT_TRUE(lent_during_reply) << "the bytes stay lent while the reply is sent";
  ASSERT_TRUE(others.answered);
  EXPECT_EQ(others.data, "cccc");
  EXPECT_EQ(others.parts, 0) << "a second reader copies while the lease is out";
  EXPECT_EQ(channel->releases, 1);
  EXPECT_TRUE(channel->lent.empty());
}

TEST_F(StreamFileTest, AUnitLargerThanTheReadIsKeptForTheSameOpen) {
  auto f = open();
  channel->push("0123456789\n");
  Answer a, b;
  f->read_async(0, 4, false, std::make_unique<FakeCompletion>(a));
  f->read_async(4, 100, false, std::make_unique<FakeCompletion>(b));
  EXPECT_EQ(a.data, "0123");
  EXPECT_EQ(b.data, "456789\n");
}

TEST_F(StreamFileTest, EmptyReadWaitsUntilDataComes) {
  auto f = open();
  Answer a;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  EXPECT_FALSE(a.answered) << "a read with no data must wait";
  file->data_ready();
  EXPECT_FALSE(a.answered) << "still no data";
  channel->push("x\n");
  std::thread producer([&] { file->data_ready(); });
  producer.join();
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.data, "x\n");
}

TEST_F(StreamFileTest, NonblockingReadGetsEagain) {
  auto f = open();
  Answer a;
  f->read_async(0, 100, true, std::make_unique<FakeCompletion>(a));
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.err, EAGAIN);
}

TEST_F(StreamFileTest, InterruptAnswersOnlyThatReaderWithEintr) {
  auto f = open();
  Answer a, b;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(b));
  InterruptSink* sink = f->interrupt_sink();
  ASSERT_NE(sink, nullptr);
  sink->interrupt(&a);
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.err, EINTR);
  EXPECT_FALSE(b.answered);
  sink->interrupt(&a);  // a second interruption of an answered request is harmless
  channel->push("y\n");
  file->data_ready();
  EXPECT_EQ(b.data, "y\n");
  // The open released while an interrupt of one of its reads is still on its
  // way: the sink is the file's, which outlives every open of it.
  f.reset();
  sink->interrupt(&b);
  EXPECT_EQ(sink, file.get());
}

TEST_F(StreamFileTest, AReadAlreadyInterruptedIsNotParked) {
  auto f = open();
  Answer a;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a, true));
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.err, EINTR);
}

TEST_F(StreamFileTest, TwelveWaitingReadersAreAllAnsweredAtTheEnd) {
  std::vector<std::unique_ptr<OpenFile>> opens;
  std::vector<Answer> answers(12);
  for (auto& a : answers) {
    opens.push_back(open());
    opens.back()->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  }
  EXPECT_EQ(channel->readers, 12);
  for (auto& a : answers) EXPECT_FALSE(a.answered);
  file->end();
  for (auto& a : answers) {
    ASSERT_TRUE(a.answered);
    EXPECT_EQ(a.err, 0);
    EXPECT_EQ(a.data, "") << "end of file";
  }
  opens.clear();
  EXPECT_EQ(channel->readers, 0);
}

TEST_F(StreamFileTest, PollReportsDataAndWakesLater) {
  auto f = open();
  int woken = 0;
  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(woken)), 0u);
  channel->push("z\n");
  file->data_ready();
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(f->poll(nullptr), static_cast<unsigned>(POLLIN));
  Answer a;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  EXPECT_EQ(a.data, "z\n") << "what poll saw is still there to read";
}

// The source is told how many reads and polls wait for data_ready(),
// counted before they look (a source that leaves data_ready() uncalled
// while none waits must not miss one that looked just before its news),
// and no longer once answered, in every way a waiter leaves.
TEST_F(StreamFileTest, TheSourceKnowsWhetherAReaderWaits) {
  auto f = open();
  channel->push("a\n");
  Answer a;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a));
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(channel->waiting_at_look, 1) << "counted before it looked";
  EXPECT_EQ(channel->waiting_now, 0) << "answered at once";
  Answer e;
  f->read_async(0, 100, true, std::make_unique<FakeCompletion>(e));
  EXPECT_EQ(e.err, EAGAIN);
  EXPECT_EQ(channel->waiting_now, 0);
  EXPECT_EQ(channel->parked, 0) << "no read was left waiting";

  Answer b, c;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(b));
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(c));
  EXPECT_EQ(channel->waiting_now, 2) << "two reads parked";
  EXPECT_EQ(channel->parked, 2);
  f->interrupt_sink()->interrupt(&b);
  EXPECT_EQ(channel->waiting_now, 1);
  channel->push("c\n");
  file->data_ready();
  EXPECT_EQ(c.data, "c\n");
  EXPECT_EQ(channel->waiting_now, 0);

  int woken = 0;
  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(woken)), 0u);
  EXPECT_EQ(channel->waiting_at_look, 1);
  EXPECT_EQ(channel->waiting_now, 1) << "a poll waiting to be woken";
  EXPECT_EQ(channel->parked, 3);
  EXPECT_EQ(f->poll(nullptr), 0u);
  EXPECT_EQ(channel->waiting_now, 1) << "a poll that asks to be woken by nobody does not wait";
  file->data_ready();
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(channel->waiting_now, 0);
  channel->push("d\n");
  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(woken)), static_cast<unsigned>(POLLIN));
  EXPECT_EQ(channel->waiting_now, 0) << "data there: the poll does not wait";
  EXPECT_EQ(channel->parked, 3);
  Answer d;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(d));

  // A read and a poll still waiting when the mount ends, a read when its
  // open goes.
  auto g = open();
  Answer x, y;
  g->read_async(0, 100, false, std::make_unique<FakeCompletion>(x));
  EXPECT_EQ(g->poll(std::make_unique<FakeNotifier>(woken)), 0u);
  EXPECT_EQ(channel->waiting_now, 2);
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(y));
  EXPECT_EQ(channel->waiting_now, 3);
  f.reset();
  EXPECT_EQ(y.err, EINTR);
  EXPECT_EQ(channel->waiting_now, 2) << "the closed open's read";
  file->end();
  EXPECT_TRUE(x.answered);
  EXPECT_EQ(woken, 2);
  EXPECT_EQ(channel->waiting_now, 0);
}

// An open polled again while its poll waits is counted once (the kernel
// asks again with a new notifier; the newest is kept and woken), and a poll
// still waiting when its open goes is no longer counted, nor woken later.
TEST_F(StreamFileTest, AnOpensWaitingPollIsCountedOnceAndUntilItCloses) {
  auto f = open(), g = open();
  int first = 0, second = 0, other = 0;
  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(first)), 0u);
  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(second)), 0u);
  EXPECT_EQ(channel->waiting_now, 1) << "one open polled twice";
  EXPECT_EQ(g->poll(std::make_unique<FakeNotifier>(other)), 0u);
  EXPECT_EQ(channel->waiting_now, 2);
  file->data_ready();
  EXPECT_EQ(first + second, 1) << "the open was woken once";
  EXPECT_EQ(second, 1) << "with its newest notifier";
  EXPECT_EQ(other, 1);
  EXPECT_EQ(channel->waiting_now, 0);

  EXPECT_EQ(f->poll(std::make_unique<FakeNotifier>(first)), 0u);
  EXPECT_EQ(g->poll(std::make_unique<FakeNotifier>(other)), 0u);
  f.reset();
  EXPECT_EQ(channel->waiting_now, 1) << "the closed open's poll is still counted";
  file->data_ready();
  EXPECT_EQ(first, 0) << "the closed open's poll was woken";
  EXPECT_EQ(other, 2);
  EXPECT_EQ(channel->waiting_now, 0);
}

// A completion that, while its answer is being sent, has a second read of
// the same open answered (as a second thread reading the same descriptor
// would), and keeps what it was sent as it was at its start and end.
struct SentTwice {
  std::string at_start, at_end;
  Answer inner;
};
class ReadingCompletion final : public ReadCompletion {
 public:
  ReadingCompletion(OpenFile& f, SentTwice& sent) : f_(f), sent_(sent) {}
  void done(int, std::string_view data) override {
    sent_.at_start = std::string(data);
    f_.read_async(0, 100, false, std::make_unique<FakeCompletion>(sent_.inner));
    sent_.at_end = std::string(data);
  }
  bool interrupted() const override { return false; }
  const void* key() const override { return this; }

 private:
  OpenFile& f_;
  SentTwice& sent_;
};

// Copied answers are made in a buffer of the open's (the memory goes with
// the open, not with the threads that answered): every read of an open,
// answered at once or once data came, uses the same one; another open its
// own; and a read of the same open while an answer is still being sent
// from it gets a buffer of its own, leaving that answer as it was.
TEST_F(StreamFileTest, CopiedAnswersAreMadeInTheOpensOwnBuffer) {
  auto f = open(), g = open();
  channel->push("a\n");
  Answer a1, a2, a3, b;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a1));
  const std::string* f_buffer = channel->taken_into;
  ASSERT_NE(f_buffer, nullptr);
  channel->push("b\n");
  g->read_async(0, 100, false, std::make_unique<FakeCompletion>(b));
  EXPECT_NE(channel->taken_into, f_buffer) << "two opens share a buffer";
  channel->push("c\n");
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a2));
  EXPECT_EQ(channel->taken_into, f_buffer) << "a second read of the open";
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a3));
  EXPECT_FALSE(a3.answered);
  channel->push("d\n");
  file->data_ready();
  EXPECT_EQ(a3.data, "d\n");
  EXPECT_EQ(channel->taken_into, f_buffer) << "a read answered once data came";

  SentTwice sent;
  channel->push("first\n");
  channel->push("second\n");
  f->read_async(0, 7, false, std::make_unique<ReadingCompletion>(*f, sent));  // (one unit a read)
  EXPECT_EQ(sent.at_start, "first\n");
  EXPECT_EQ(sent.inner.data, "second\n");
  EXPECT_NE(channel->taken_into, f_buffer) << "the inner read used the buffer an answer was being sent from";
  EXPECT_EQ(sent.at_end, "first\n") << "an answer changed while it was sent";
  channel->push("e\n");
  Answer a4;
  f->read_async(0, 100, false, std::make_unique<FakeCompletion>(a4));
  EXPECT_EQ(a4.data, "e\n");
  EXPECT_EQ(channel->taken_into, f_buffer) << "the open's buffer was not given back";
}

// A completion whose sending takes until the test lets it go, as a reply
// on its way into the kernel while the reader, already answered, closes.
class HeldCompletion final : public ReadCompletion {
 public:
  HeldCompletion(std::promise<void>& sending, std::shared_future<void> go) : sending_(sending), go_(std::move(go)) {}
  void done(int, std::string_view) override {
    sending_.set_value();
    go_.wait();
  }
  bool interrupted() const override { return false; }
  const void* key() const override { return this; }

 private:
  std::promise<void>& sending_;
  std::shared_future<void> go_;
};

// An open released while an answer made in its buffer is still being sent
// (answered once data came, from the source's thread) is not freed under
// it: the release waits until the answer is out.
TEST_F(StreamFileTest, AnOpenClosedWhileItsAnswerIsSentWaitsForIt) {
  auto f = open();
  std::promise<void> sending, go;
  f->read_async(0, 100, false, std::make_unique<HeldCompletion>(sending, go.get_future().share()));
  channel->push("a\n");
  std::thread source([this] { file->data_ready(); });
  sending.get_future().wait();
  auto closed = std::async(std::launch::async, [&f] { f.reset(); });
  EXPECT_EQ(closed.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the open was freed while its answer was sent from its buffer";
  go.set_value();
  EXPECT_EQ(closed.wait_for(eventfs_it::scaled(std::chrono::seconds(10))), std::future_status::ready)
      << "the release never ended";
  source.join();
}

// A source with nothing to give, whose count of waiters any thread may
// change.
class EmptyChannel final : public StreamChannel {
 public:
  bool take(std::size_t, std::string&) override { return false; }
  bool readable() override { return false; }
  void waiting(int delta) override { waiting_now += delta; }
  std::atomic<int> waiting_now{0};
};

struct CountingNotifier final : public PollNotifier {
  explicit CountingNotifier(std::atomic<int>& n) : count(n) {}
  void notify() override { ++count; }
  std::atomic<int>& count;
};

// Opens polled (some twice) and closed on one thread while the source
// wakes the file's pollers again and again on another: each waiting poll
// is uncounted by whichever of the two takes it, once (a close that missed
// one leaves it counted; one that took a poll the source had taken too
// counts it out twice), and no open is woken more often than it polled.
TEST(StreamFileThreads, PollsOfOpensClosingWhileTheSourceWakesAreUncountedOnce) {
  auto channel = std::make_shared<EmptyChannel>();
  auto file = std::make_shared<StreamFile>(channel);
  std::deque<std::atomic<int>> woken;  // (a deque keeps them in place: a notifier may outlive its open)
  std::atomic<bool> done{false};
  std::atomic<long> wakes{0};
  std::thread source([&] {
    while (!done.load()) {
      file->data_ready();
      ++wakes;
    }
  });
  while (wakes.load() == 0) std::this_thread::yield();
  // Until both have happened often: an open whose poll the source woke
  // before the open closed, and one whose poll was still unwoken when its
  // close began (the close or the source then takes it, whichever comes
  // first: the race under test).
  constexpr int kEach = 200, kMostOpens = 200000;
  int polled = 0, parked = 0, woken_before_close = 0, unwoken_at_close = 0;
  for (int i = 0; i < kMostOpens && (woken_before_close < kEach || unwoken_at_close < kEach); ++i) {
    std::unique_ptr<OpenFile> f;
    if (file->open(O_RDONLY, f) != 0) {
      ADD_FAILURE() << "open failed";
      break;
    }
    std::atomic<int>& w = woken.emplace_back(0);
    const int polls = 1 + i % 2;
    for (int p = 0; p < polls; ++p, ++polled)
      if (f->poll(std::make_unique<CountingNotifier>(w)) == 0) ++parked;
    const int before_close = w.load();
    f.reset();
    if (before_close > 0) ++woken_before_close;
    if (before_close < polls) ++unwoken_at_close;
  }
  done = true;
  source.join();
  EXPECT_GE(woken_before_close, kEach);
  EXPECT_GE(unwoken_at_close, kEach);
  int i = 0;
  for (const auto& w : woken) EXPECT_LE(w.load(), 1 + i++ % 2) << "open " << i - 1 << " woken more than it polled";
  EXPECT_EQ(parked, polled) << "a poll of a source with nothing found something";
  EXPECT_EQ(channel->waiting_now.load(), 0) << "polls left counted, or counted out twice";
  file->data_ready();
  EXPECT_EQ(channel->waiting_now.load(), 0);
}

}  // namespace
}  // namespace eventfs
