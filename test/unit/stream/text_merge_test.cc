// The merged text stream (trace_pipe) marks a CPU's gap where it is in
// time: after the other CPUs' older records, just before that CPU's first
// record after the gap.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "eventfs/record.h"
#include "projection/projection.h"
#include "stream/hub_cpu.h"
#include "stream/text_merge.h"
#include "support/fake_hub_services.h"
#include "support/fixture_kernels.h"

namespace eventfs {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TextMerge, ACpusGapIsMarkedAfterTheOtherCpusOlderRecords) {
  testing::ResolvedFixture fx("linux-6.18");
  ASSERT_FALSE(fx.resolution.available.empty());
  ProjectionTable table(fx.resolution.available);
  const Projection& p = table.projections().front();
  const std::uint32_t size = record_size(p);
  auto record = [&](std::uint64_t ts) {
    std::vector<std::uint8_t> r(size, 0);
    eventfs_record_header h{size, p.stable_id(), ts, 1, EVENTFS_RECORD_VERSION, 0};
    std::memcpy(r.data(), &h, sizeof h);
    return r;
  };
  HubCpus cpus;
  cpus.push_back(std::make_unique<HubCpu>(1 << 20, 1 << 16, size));
  cpus.push_back(std::make_unique<HubCpu>(2 * size, 1 << 16, size));  // room for two records
  for (std::uint64_t us : {1000, 3000}) cpus[0]->queue.push(1, record(us * 1000).data());
  for (std::uint64_t us : {500, 1500, 2000}) cpus[1]->queue.push(1, record(us * 1000).data());  // 500 dropped
  testing::FakeHubServices hub;
  TextMerge merge(cpus, fx.resolution, hub);
  std::string out;
  ASSERT_TRUE(merge.take(1 << 20, out));
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 5u) << out;
  const char* expected[] = {" 0.001000: ", "CPU:1 [LOST 1 EVENTS]", " 0.001500: ", " 0.002000: ", " 0.003000: "};
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_NE(lines[i].find(expected[i]), std::string::npos) << "line " << i << " of:\n" << out;
}

// A task no longer alive that saved_cmdlines names only since the table was
// last read: its lines are mended in the same take, not left "<...>".
TEST(TextMerge, ALineOfATaskTheTableNamedSinceItsLastReadIsMendedInTheSameTake) {
  testing::ResolvedFixture fx("linux-6.18");
  ASSERT_FALSE(fx.resolution.available.empty());
  ProjectionTable table(fx.resolution.available);
  const Projection& p = table.projections().front();
  const std::uint32_t size = record_size(p);
  constexpr std::int32_t kGone = 5000000;  // above any pid_max: no /proc entry
  auto record = [&](std::uint64_t ts, std::int32_t pid) {
    std::vector<std::uint8_t> r(size, 0);
    eventfs_record_header h{size, p.stable_id(), ts, pid, EVENTFS_RECORD_VERSION, 0};
    std::memcpy(r.data(), &h, sizeof h);
    return r;
  };
  HubCpus cpus;
  cpus.push_back(std::make_unique<HubCpu>(1 << 20, 1 << 16, size));
  int reads = 0;
  std::string saved;
  testing::FakeHubServices hub;
  hub.cmdlines = [&] {
    ++reads;
    // A read that costs 10 ms: the next is CommCache::kMaxRefresh later at the soonest.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return saved;
  };
  TextMerge merge(cpus, fx.resolution, hub);
  // A take with no miss first (kthreadd is alive, and in the table).
  saved = "2 kthreadd\n";
  cpus[0]->queue.push(2, record(500, 2).data());
  std::string out;
  ASSERT_TRUE(merge.take(1 << 20, out));
  EXPECT_EQ(out.rfind("kthreadd-2 [000] ", 0), 0u) << out;
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  const int before = reads;
  // The task ran, the kernel saved its name, and it exited before the take.
  saved += "5000000 gone-task\n";
  cpus[0]->queue.push(kGone, record(1000, kGone).data());
  cpus[0]->queue.push(0, record(2000, 0).data());
  cpus[0]->queue.push(kGone + 1, record(3000, kGone + 1).data());
  out = "earlier text\n";
  ASSERT_TRUE(merge.take(1 << 20, out));
  EXPECT_EQ(reads, before + 1);
  const std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), 4u) << out;
  EXPECT_EQ(lines[0], "earlier text");
  EXPECT_EQ(lines[1].rfind("gone-task-5000000 [000] ", 0), 0u) << out;
  EXPECT_EQ(lines[2].rfind("<idle>-0 [000] ", 0), 0u) << out;
  EXPECT_EQ(lines[3].rfind("<...>-5000001 [000] ", 0), 0u) << "a name neither has: " << out;
  // Another miss soon after: the table is not read again.
  cpus[0]->queue.push(kGone + 1, record(4000, kGone + 1).data());
  out.clear();
  ASSERT_TRUE(merge.take(1 << 20, out));
  EXPECT_EQ(reads, before + 1);

  // A gone task the older copy of the table names by its parent's name: the
  // kernel has saved the name it took since; the line is mended.
  saved = "5000000 gone-task\n5000002 renamed\n";
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  cpus[0]->queue.push(kGone + 1, record(4500, kGone + 1).data());
  ASSERT_TRUE(merge.take(1 << 20, out));  // (reads the table: 5000001 missed)
  saved = "5000000 gone-task\n5000002 efs-ping\n";
  std::this_thread::sleep_for(CommCache::kMaxRefresh);
  cpus[0]->queue.push(kGone + 2, record(5000, kGone + 2).data());
  out.clear();
  const int before_stale = reads;
  ASSERT_TRUE(merge.take(1 << 20, out));
  EXPECT_EQ(reads, before_stale + 1) << "named from a copy read before the take";
  EXPECT_EQ(out.rfind("efs-ping-5000002 [000] ", 0), 0u) << out;
}

}  // namespace
}  // namespace eventfs
