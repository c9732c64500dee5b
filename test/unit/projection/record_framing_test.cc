// The records eventfs hands out: a projected record and a lost record
// framed by eventfs/record.h's header, and the header's pid wherever a
// kernel puts common_pid.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "eventfs/record.h"
#include "projection/projection.h"
#include "support/fixture_kernels.h"
#include "support/synthetic.h"
#include "tracefs/raw_format_parser.h"

namespace eventfs {
namespace {

using testing::RawRecord;
using testing::ResolvedFixture;
using testing::StableView;
using testing::switch_record;

TEST(RecordFraming, RecordFraming) {
  ResolvedFixture fx("linux-6.18");
  const Binding* b = fx.binding("sched_switch");
  ASSERT_NE(b, nullptr);
  Projection p = Projection::compile(*b);
  auto raw = switch_record(*b, {"a", 1, 1, "b", 2}, 1);
  std::vector<std::uint8_t> buf(record_size(p) + lost_record_size(), 0xee);
  std::uint32_t n = write_record(p, 12345, raw.data(), static_cast<std::uint32_t>(raw.size()), buf.data());
  EXPECT_EQ(n, 24u + 48u);  // 44-byte payload after the 24-byte header, padded to 8
  std::uint32_t m = write_lost_record(999, 17, 3, true, buf.data() + n);
  EXPECT_EQ(m, 40u);
  auto* h = reinterpret_cast<const eventfs_record_header*>(buf.data());
  EXPECT_EQ(eventfs_record_check(h, buf.size()), n);
  EXPECT_EQ(h->id, 1u);
  EXPECT_EQ(h->timestamp, 12345u);
  EXPECT_EQ(h->pid, 1);  // the raw record's common_pid
  EXPECT_EQ(h->version, EVENTFS_RECORD_VERSION);
  EXPECT_EQ(h->reserved, 0u);
  for (std::uint32_t i = 24 + 44; i < n; ++i) EXPECT_EQ(buf[i], 0) << i;
  auto* l = reinterpret_cast<const eventfs_record_header*>(buf.data() + n);
  ASSERT_EQ(eventfs_record_check(l, m), m);
  EXPECT_EQ(l->id, EVENTFS_ID_LOST);
  EXPECT_EQ(l->pid, 0);
  auto* lp = static_cast<const eventfs_lost*>(EVENTFS_RECORD_PAYLOAD(l));
  EXPECT_EQ(lp->count, 17u);
  EXPECT_EQ(lp->cpu, 3u);
  EXPECT_EQ(lp->flags, EVENTFS_LOST_COUNT_UNKNOWN);
  EXPECT_EQ(eventfs_record_check(h, n - 1), 0u);
}

extern "C" int eventfs_record_h_c99_check(void);

TEST(RecordFraming, RecordHeaderIsValidC99) { EXPECT_EQ(eventfs_record_h_c99_check(), 0); }

// Whatever common fields a kernel has around common_pid (a common_padding
// before it, a common_lock_depth after it, as some kernels had), the header's
// pid is common_pid's value.
TEST(RecordFraming, ThePidComesFromCommonPidWhereverTheKernelPutsIt) {
  std::ifstream in(testing::fixture_dir("linux-6.18") + "/events/sched/sched_switch/format");
  std::stringstream text;
  text << in.rdbuf();
  // common_pid moves from 4 to 8 behind a common_padding, a common_lock_depth
  // follows it at 12, and the event's own fields move 16 bytes up.
  std::string fixed;
  std::istringstream lines(text.str());
  std::string line;
  while (std::getline(lines, line)) {
    auto at = line.find("offset:");
    if (at != std::string::npos && line.find("common_pid;") != std::string::npos) {
      fixed += "\tfield:int common_padding;\toffset:4;\tsize:4;\tsigned:1;\n";
      fixed += "\tfield:int common_pid;\toffset:8;\tsize:4;\tsigned:1;\n";
      fixed += "\tfield:int common_lock_depth;\toffset:12;\tsize:4;\tsigned:1;\n";
      continue;
    }
    if (at != std::string::npos && line.find("common_") == std::string::npos) {
      const unsigned off = static_cast<unsigned>(std::stoul(line.substr(at + 7)));
      line = line.substr(0, at + 7) + std::to_string(off + 16) + line.substr(line.find(';', at));
    }
    fixed += line + "\n";
  }
  auto parsed = parse_raw_format("sched", fixed);
  ASSERT_TRUE(parsed) << parsed.reason() << "\n" << fixed;
  const RawEvent& raw = *parsed;
  ASSERT_NE(raw.field("common_padding"), nullptr);
  ASSERT_EQ(raw.field("common_pid")->offset, 8u);
  Catalog cat = testing::builtin_catalog();
  auto bound = bind_stable_event(*cat.find("sched_switch"),
                                 [&](const RawEventName&) -> Result<const RawEvent*> { return &raw; });
  ASSERT_TRUE(bound) << bound.reason();
  const Binding& b = *bound;
  Projection p = Projection::compile(b);
  RawRecord r(raw);
  r.set_int("common_padding", 0xdead).set_int("common_pid", 4242).set_int("common_lock_depth", 7);
  r.set_int("prev_pid", 4242).set_int("next_pid", 9);
  auto bytes = r.bytes();
  std::vector<std::uint8_t> out(record_size(p));
  write_record(p, 5, bytes.data(), static_cast<std::uint32_t>(bytes.size()), out.data());
  eventfs_record_header h;
  std::memcpy(&h, out.data(), sizeof h);
  EXPECT_EQ(h.pid, 4242);
  EXPECT_EQ(h.version, EVENTFS_RECORD_VERSION);
  StableView v{b, out.data() + sizeof h};
  EXPECT_EQ(v.num<std::int32_t>("next_pid"), 9);
  EXPECT_EQ(v.num<std::int32_t>("prev_pid"), 4242);
}

}  // namespace
}  // namespace eventfs
