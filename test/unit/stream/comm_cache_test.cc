// The text stream's task names: saved_cmdlines parsed, looked up without
// I/O, re-read only after a miss and not more often than kMinRefresh.
#include <gtest/gtest.h>

#include <thread>

#include "stream/comm_cache.h"

namespace eventfs {
namespace {

std::string name(const CommCache& c, std::int32_t pid) {
  char buf[16];
  return std::string(buf, c.name_of(pid, buf));
}

TEST(CommCache, NamesComeFromSavedCmdlinesAndAMissBringsARefresh) {
  int reads = 0;
  std::string table = "1 systemd\n42 bash\n7 a-name-longer-than-sixteen\nbogus line\n-3 neg\n";
  CommCache c([&] {
    ++reads;
    return table;
  });
  c.refresh();  // nothing known yet: the first refresh reads
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(name(c, 42), "bash");
  EXPECT_EQ(name(c, 1), "systemd");
  EXPECT_EQ(name(c, 7), "a-name-longer-th");  // the kernel's TASK_COMM_LEN
  EXPECT_EQ(name(c, -3), "");
  c.refresh();
  EXPECT_EQ(reads, 1) << "-3 missed, but the last read was too recent";
  std::this_thread::sleep_for(CommCache::kMinRefresh);
  c.refresh();
  EXPECT_EQ(reads, 2) << "-3 missed";
  // No miss since: no read, however long after.
  EXPECT_EQ(name(c, 42), "bash");
  std::this_thread::sleep_for(CommCache::kMinRefresh);
  c.refresh();
  EXPECT_EQ(reads, 2);
  // A new task: unknown until a refresh.
  table += "99 newcomer\n";
  EXPECT_EQ(name(c, 99), "");
  c.refresh();
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(name(c, 99), "newcomer");
}

}  // namespace
}  // namespace eventfs
