// The text stream's task names: a live task's name as /proc says it (looked
// up again in each batch of lines), else saved_cmdlines, parsed, re-read
// only after a miss and not more often than kMinRefresh.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <future>
#include <pthread.h>
#include <thread>

#include "stream/comm_cache.h"

namespace eventfs {
namespace {

std::string name(CommCache& c, std::int32_t pid) {
  char buf[16];
  return std::string(buf, c.name_of(pid, buf));
}

TEST(CommCache, NamesComeFromSavedCmdlinesAndAMissBringsARefresh) {
  int reads = 0;
  std::string table = "1 systemd\n42 bash\n7 a-name-longer-than-sixteen\nbogus line\n-3 neg\n";
  CommCache c(
      [&] {
        ++reads;
        // A read that costs 10 ms: the next is kMaxRefresh later at the soonest.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return table;
      },
      nullptr);
  EXPECT_TRUE(c.refresh()) << "nothing known yet: the first refresh reads";
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(c.refresh_gap(), CommCache::kMaxRefresh) << "20 times a read of 10 ms, at most kMaxRefresh";
  EXPECT_EQ(name(c, 42), "bash");
  EXPECT_EQ(name(c, 1), "systemd");
  EXPECT_EQ(name(c, 7), "a-name-longer-th");  // the kernel's TASK_COMM_LEN
  EXPECT_EQ(name(c, -3), "");
  EXPECT_EQ(name(c, 0), "") << "the idle task is <idle>, not looked up";
  EXPECT_FALSE(c.refresh());
  EXPECT_EQ(reads, 1) << "neither -3 nor 0 is a task to look for";
  EXPECT_EQ(name(c, 5), "");
  EXPECT_FALSE(c.refresh());
  EXPECT_EQ(reads, 1) << "5 missed, but the last read was too recent";
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  EXPECT_TRUE(c.refresh());
  EXPECT_EQ(reads, 2) << "5 missed";
  // No miss since: no read, however long after.
  EXPECT_EQ(name(c, 42), "bash");
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  c.refresh();
  EXPECT_EQ(reads, 2);
  // A new task: unknown until a refresh.
  table += "99 newcomer\n";
  EXPECT_EQ(name(c, 99), "");
  c.refresh();
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(name(c, 99), "newcomer");
}

// A live task's name is its name now (a thread that renamed itself after
// the table saved its parent's name), looked up once per batch of lines; a
// task that is gone has the table's name.
TEST(CommCache, ALiveTasksNameIsItsNameNowAndAGoneTasksTheTables) {
  std::map<std::int32_t, std::string> alive{{10, "parent"}};
  int asked = 0, reads = 0;
  CommCache c(
      [&] {
        ++reads;
        return std::string("10 parent\n11 parent\n12 exited\n");
      },
      [&](std::int32_t pid, std::string& out) {
        ++asked;
        auto it = alive.find(pid);
        if (it == alive.end()) return false;
        out = it->second;
        return true;
      });
  c.refresh();
  EXPECT_EQ(name(c, 10), "parent");
  EXPECT_EQ(asked, 1);
  alive[11] = "efs-ping";  // the table still has the parent's name
  EXPECT_EQ(name(c, 11), "efs-ping");
  EXPECT_EQ(name(c, 12), "exited") << "gone: the table's name";
  EXPECT_EQ(name(c, 13), "") << "neither knows it";
  EXPECT_EQ(asked, 4);
  alive[10] = "renamed";
  EXPECT_EQ(name(c, 10), "parent") << "looked up in this batch: kept";
  EXPECT_EQ(name(c, 12), "exited");
  EXPECT_EQ(asked, 4) << "each pid once per batch, found or not";
  c.begin();  // the next batch: its records may be newer than the rename
  EXPECT_EQ(name(c, 10), "renamed");
  EXPECT_EQ(name(c, 10), "renamed");
  EXPECT_EQ(asked, 5);
}

// A task gone that the table lacks, or that the cache saw alive after it
// read the table, keeps the name the cache saw it alive with: a reader that
// renders its lines after the task ended still names it.
TEST(CommCache, AGoneTaskTheTableLacksKeepsTheNameItWasLastSeenAliveWith) {
  std::map<std::int32_t, std::string> alive{{20, "efs-ping"}, {21, "child"}};
  std::string table = "21 parent\n";
  CommCache c([&] { return table; },
              [&](std::int32_t pid, std::string& out) {
                auto it = alive.find(pid);
                if (it == alive.end()) return false;
                out = it->second;
                return true;
              });
  c.refresh();  // the table read: 21 under its parent's name
  c.begin();
  EXPECT_EQ(name(c, 20), "efs-ping");
  EXPECT_EQ(name(c, 21), "child");
  alive.clear();  // both end
  c.begin();
  EXPECT_EQ(name(c, 20), "efs-ping") << "not in the table: the name last seen";
  EXPECT_EQ(name(c, 21), "child") << "the table was read before the task was last seen alive";
  EXPECT_FALSE(c.refresh()) << "neither lookup missed";
  // A table read after the last sight is newer: it wins.
  table = "20 renamed\n21 parent\n";
  c.load(table);
  c.begin();
  EXPECT_EQ(name(c, 20), "renamed");
  EXPECT_EQ(name(c, 21), "parent");
  EXPECT_EQ(name(c, 22), "") << "never seen, not in the table";
}

// A gone task named from a copy of the table read before the batch brings a
// refresh (the kernel may have saved a newer name: a thread that renamed
// itself after the copy was read), as soon as the last read's cost allows.
TEST(CommCache, AGoneTaskNamedFromAnOlderCopyOfTheTableBringsARefresh) {
  std::string table = "21 parent\n";
  int reads = 0;
  CommCache c(
      [&] {
        ++reads;
        return table;
      },
      [](std::int32_t, std::string&) { return false; });  // every task gone
  EXPECT_TRUE(c.refresh());
  EXPECT_LT(c.refresh_gap(), CommCache::kMaxRefresh) << "a cheap read: refreshes may come sooner";
  c.begin();
  CommCache::Source from;
  char buf[16];
  EXPECT_EQ(std::string(buf, c.name_of(21, buf, &from)), "parent");
  EXPECT_EQ(from, CommCache::Source::kTable);
  table = "21 efs-ping\n";  // the kernel saved the name the thread took
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  EXPECT_TRUE(c.refresh()) << "named from a copy older than the batch";
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(name(c, 21), "efs-ping");
  EXPECT_FALSE(c.refresh()) << "named from a copy read in this batch: no reason to read again";
  c.begin();
  EXPECT_EQ(name(c, 21), "efs-ping");
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  EXPECT_TRUE(c.refresh()) << "a new batch named it from the older copy";
  EXPECT_EQ(reads, 3);
}

TEST(CommCache, ProcNamesThisProcessWhereItSeesTheKernelsPidsAndNoKernelThread) {
  auto live = CommCache::proc_comm();
  if (!live) GTEST_SKIP() << "in a child pid namespace: /proc's pids are not the kernel's";
  std::string own;
  ASSERT_TRUE(live(::getpid(), own));
  char expected[17] = {};
  FILE* f = std::fopen("/proc/self/comm", "r");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(std::fgets(expected, sizeof expected, f), nullptr);
  std::fclose(f);
  std::string want(expected);
  if (!want.empty() && want.back() == '\n') want.pop_back();
  EXPECT_EQ(own, want);
  std::string none;
  EXPECT_FALSE(live(0x3fffffff, none));
  // A kernel thread's /proc name is not its comm (a workqueue worker's
  // carries its work): left to the table.
  EXPECT_FALSE(live(2, none)) << "kthreadd: " << none;
  // A name with the stat line's own separators in it.
  std::promise<int> started;
  std::promise<void> done;
  std::thread t([&] {
    ::pthread_setname_np(::pthread_self(), "x) 1 (y");
    started.set_value(::gettid());
    done.get_future().wait();
  });
  std::string odd;
  EXPECT_TRUE(live(started.get_future().get(), odd));
  EXPECT_EQ(odd, "x) 1 (y");
  done.set_value();
  t.join();
}

}  // namespace
}  // namespace eventfs
