// per_cpu/cpuN/stats: its "entries" count every record eventfs holds for
// the CPU's streams, in the record queue and in the drainer's staging queue
// (eventfs-record ends a CPU's drain only once that is 0).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "eventfs/record.h"
#include "recorder/cpu_stats_lines.h"
#include "stream/cpu_stats.h"
#include "stream/hub_cpu.h"
#include "stream/ring_session.h"
#include "support/fake_hub_services.h"

namespace eventfs {
namespace {

void queue_one(RecordQueue& q, std::uint64_t ts) {
  const std::uint32_t size = EVENTFS_RECORD_SIZE(8);
  std::uint8_t* to = q.reserve(1, size, ts);
  ASSERT_NE(to, nullptr);
  eventfs_record_header h{};
  h.size = size;
  h.version = EVENTFS_RECORD_VERSION;
  h.id = 1000;
  h.timestamp = ts;
  std::memset(to, 0, size);
  std::memcpy(to, &h, sizeof h);
}

TEST(CpuStats, EntriesCountTheStagedRecordsWithTheQueued) {
  HubCpus cpus;
  cpus.push_back(std::make_unique<HubCpu>(1u << 20, 1u << 16, EVENTFS_RECORD_SIZE(8)));
  HubCpu& c = *cpus[0];
  testing::FakeHubServices hub;
  RingFiles files("/nonexistent-eventfs-instance");
  RingSession session(cpus, files, ReaderMode::Read, hub);
  for (std::uint64_t ts = 1; ts <= 2; ++ts) queue_one(c.queue, ts);
  EXPECT_EQ(recorder::stats_number(cpu_stats_text(c, session, files, 0), "entries"), 2u);
  c.staging_records = 5;
  const std::string text = cpu_stats_text(c, session, files, 0);
  EXPECT_EQ(recorder::stats_number(text, "entries"), 7u) << text;
}

}  // namespace
}  // namespace eventfs
