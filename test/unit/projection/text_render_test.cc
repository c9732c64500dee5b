// Text lines of projected records: the same line on every kernel.
#include <gtest/gtest.h>

#include "support/fixture_kernels.h"
#include "projection/text_render.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using testing::RawRecord;
using testing::ResolvedFixture;

std::string render(const Binding& b, const RawRecord& r, unsigned cpu, std::uint64_t ts) {
  Projection p = Projection::compile(b);
  TextFormat f = TextFormat::compile(b);
  std::vector<std::uint8_t> scratch(p.payload_size());
  std::string out = "previous line\n";
  render_raw_record(out, p, f, cpu, ts, r.bytes().data(), static_cast<std::uint32_t>(r.bytes().size()),
                    scratch.data());
  EXPECT_EQ(out.rfind("previous line\n", 0), 0u);  // appended, not replaced
  return out.substr(14);
}

TEST(TextRender, SchedSwitchIsTheSameLineOnEveryKernel) {
  struct {
    const char* kernel;
    std::uint64_t sleeping;  // the raw bit for 'S'
  } cases[] = {{"linux-2.6.36", 1}, {"linux-6.18", 1}, {"linux-32bit-alt", 2}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.kernel);
    ResolvedFixture fx(c.kernel);
    const Binding* b = fx.binding("sched_switch");
    ASSERT_NE(b, nullptr);
    RawRecord r(b->raw);
    r.set_int("common_pid", 1234).set_str("prev_comm", "bash").set_int("prev_pid", 1234);
    r.set_int("prev_state", c.sleeping).set_str("next_comm", "swapper/1").set_int("next_pid", 0);
    EXPECT_EQ(render(*b, r, 1, 5321000042123ull),
              "<...>-1234 [001] 5321.000042: sched_switch: prev_comm=bash prev_pid=1234 prev_state=S "
              "next_comm=swapper/1 next_pid=0\n");
    r.set_int("prev_state", 0).set_str("prev_comm", "tab\there");
    EXPECT_EQ(render(*b, r, 12, 999),
              "<...>-1234 [012] 0.000000: sched_switch: prev_comm=tab?here prev_pid=1234 prev_state=R "
              "next_comm=swapper/1 next_pid=0\n");
  }
}

TEST(TextRender, IntegerArraysAndSignedness) {
  struct {
    const char* kernel;
    const char* last_arg;
  } cases[] = {{"linux-6.18", "18446744073709551615"}, {"linux-32bit-alt", "4294967295"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.kernel);
    ResolvedFixture fx(c.kernel);
    const Binding* b = fx.binding("sys_enter");
    ASSERT_NE(b, nullptr);
    RawRecord r(b->raw);
    r.set_int("common_pid", 7).set_int("id", static_cast<std::uint64_t>(-1));
    for (unsigned i = 0; i < 5; ++i) r.set_int("args", i, i);
    r.set_int("args", static_cast<std::uint64_t>(-1), 5);
    EXPECT_EQ(render(*b, r, 0, 1000000000ull + 1000),
              std::string("<...>-7 [000] 1.000001: sys_enter: id=-1 args={0,1,2,3,4,") + c.last_arg + "}\n");
  }
}

TEST(TextRender, UnsignedAndSignedScalars) {
  ResolvedFixture fx("linux-6.18");
  const Binding* b = fx.binding("softirq_entry");
  ASSERT_NE(b, nullptr);
  RawRecord r(b->raw);
  r.set_int("common_pid", 0).set_int("vec", 0xffffffffu);
  EXPECT_EQ(render(*b, r, 3, 0), "<idle>-0 [003] 0.000000: softirq_entry: vec=4294967295\n");
  const Binding* x = fx.binding("irq_handler_exit");
  ASSERT_NE(x, nullptr);
  RawRecord rx(x->raw);
  rx.set_int("common_pid", 1).set_int("irq", 16).set_int("ret", static_cast<std::uint64_t>(-22));
  EXPECT_EQ(render(*x, rx, 0, 0), "<...>-1 [000] 0.000000: irq_handler_exit: irq=16 ret=-22\n");
}

TEST(TextRender, LongFilenameIsTruncated) {
  ResolvedFixture fx("linux-6.18");
  const Binding* b = fx.binding("sched_process_exec");
  ASSERT_NE(b, nullptr);
  RawRecord r(b->raw);
  std::string path = "/" + std::string(200, 'p');
  r.set_int("common_pid", 5).set_str("filename", path).set_int("pid", 5).set_int("old_pid", 5);
  EXPECT_EQ(render(*b, r, 0, 0),
            "<...>-5 [000] 0.000000: sched_process_exec: filename=" + path.substr(0, 127) + " pid=5 old_pid=5\n");
}

// The task column as tracefs prints it: the name the caller knows, at most
// 16 bytes, control bytes shown as '?'.
TEST(TextRender, TheTaskColumnIsCommDashPid) {
  ResolvedFixture fx("linux-6.18");
  const Binding* b = fx.binding("softirq_entry");
  ASSERT_NE(b, nullptr);
  TextFormat f = TextFormat::compile(*b);
  std::vector<std::uint8_t> payload(64, 0);
  std::string out;
  f.render(out, "ksoftirqd/1", 17, 1, 2000, payload.data());
  EXPECT_EQ(out.rfind("ksoftirqd/1-17 [001] 0.000002: softirq_entry:", 0), 0u) << out;
  out.clear();
  f.render(out, std::string_view("a\x01name-longer-than-16", 21), 5, 0, 0, payload.data());
  EXPECT_EQ(out.rfind("a?name-longer-th-5 [000] ", 0), 0u) << out;
  out.clear();
  f.render(out, {}, 0, 0, 0, payload.data());
  EXPECT_EQ(out.rfind("<idle>-0 [000] ", 0), 0u) << out;
}

}  // namespace
}  // namespace eventfs
