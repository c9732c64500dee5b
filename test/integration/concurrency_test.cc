// Many readers at once: 8 threads read stable and raw formats from a fresh
// mount (directories filled and formats rendered on first use, under load)
// for about a second, and each at least once through every file; every read
// must give what a quiet mount gives.
#include <atomic>
#include <random>
#include <thread>

#include "support/mounted_eventfs.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

TEST(Concurrency, EightThreadsReadingFormatsAllGetTheRightText) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  // The reference: a separate mount, read by one thread.
  std::vector<std::string> rels;
  std::map<std::string, std::string> expected;
  {
    MountedEventfs ref;
    ASSERT_TRUE(ref.Start());
    for (const auto& ev : split_lines(slurp(ref / "available_events"))) {
      rels.push_back(ev + "/format");
      rels.push_back(ev + "/id");
    }
    rels.push_back("available_events");
    rels.push_back("README");
    for (const auto& ev : tracefs_events(kLiveTracefs)) rels.push_back("raw/" + ev + "/format");
    for (const auto& rel : rels) {
      std::string text;
      ASSERT_EQ(read_file(ref / rel, text), 0) << rel;
      expected[rel] = text;
    }
  }
  ASSERT_GT(rels.size(), 100u);
  EXPECT_EQ(expected["sched_switch/format"], kGoldenSchedSwitch);

  MountedEventfs m;  // cold: nothing looked up or rendered yet
  ASSERT_TRUE(m.Start());
  constexpr int kThreads = 8;
  const auto at_least = Clock::now() + 1s;
  const auto at_most = Clock::now() + scaled(60s);  // a slow machine's bound
  std::atomic<long> reads{0}, wrong{0}, errors{0}, whole_walks{0};
  std::mutex mu;
  std::vector<std::string> first_problems;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(mu);
    if (first_problems.size() < 10) first_problems.push_back(what);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the files in its own order; half of them drop the
      // page cache after each read so the reads keep reaching the daemon.
      std::vector<std::string> order = rels;
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1);
      std::shuffle(order.begin(), order.end(), rng);
      const bool uncached = t % 2 == 1;
      std::size_t done = 0;
      for (std::size_t i = 0; (Clock::now() < at_least || done < order.size()) && Clock::now() < at_most;
           i = (i + 1) % order.size(), ++done) {
        const std::string& rel = order[i];
        std::string path = m / rel;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          ++errors;
          note("open " + rel + ": " + std::strerror(errno));
          continue;
        }
        std::string text;
        char buf[4096];
        ssize_t n;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
        if (n < 0) {
          ++errors;
          note("read " + rel + ": " + std::strerror(errno));
        }
        if (uncached) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
        if (n == 0 && text != expected.at(rel)) {
          ++wrong;
          note("wrong text in " + rel + ": [" + text + "]");
        }
        ++reads;
      }
      if (done >= order.size()) ++whole_walks;
    });
  }
  for (auto& th : threads) th.join();
  RecordProperty("reads", static_cast<int>(reads.load()));
  RecordProperty("files", static_cast<int>(rels.size()));
  EXPECT_EQ(errors.load(), 0) << join(first_problems);
  EXPECT_EQ(wrong.load(), 0) << join(first_problems);
  EXPECT_EQ(whole_walks.load(), kThreads) << "threads that did not read every file once in "
                                         << scaled(60s).count() << " ms";
  // Still serving correctly afterwards, and nothing on stderr.
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_EQ(m.Stderr(), "");
}

}  // namespace
}  // namespace eventfs_it
