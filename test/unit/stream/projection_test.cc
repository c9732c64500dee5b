// Projections over synthetic sub-buffers of every fixture kernel: records are
// laid out as each kernel's format says, put in a sub-buffer the way the
// kernel writes one, walked with kbuffer and projected into stable records.
#include <gtest/gtest.h>

#include <cstring>

#include <sys/mman.h>
#include <unistd.h>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "support/fixture_kernels.h"
#include "eventfs/record.h"
#include "projection/projection.h"
#include "ring/subbuf.h"
#include "support/synthetic.h"
#include "tracefs/raw_format_parser.h"

namespace eventfs {
namespace {

using testing::CollectSink;
using testing::RawRecord;
using testing::ResolvedFixture;
using testing::StableView;
using testing::SubbufBuilder;
using testing::fixture_kernels;

unsigned long_size_of(const std::string& kernel) {
  std::ifstream in(testing::fixture_dir(kernel) + "/events/header_page");
  std::stringstream s;
  s << in.rdbuf();
  return header_page_long_size(s.str());
}

// Walks one sub-buffer with kbuffer.
CollectSink walk(const std::vector<std::uint8_t>& page, unsigned long_size) {
  SubbufParser parser(long_size);
  EXPECT_TRUE(parser.load(page.data(), page.size()));
  CollectSink sink;
  std::uint32_t from = 0;
  parser.walk(sink, from, 1000);
  EXPECT_EQ(from, parser.data_size());
  return sink;
}

struct Switch {
  const char* prev_comm;
  int prev_pid;
  std::uint64_t prev_state;
  const char* next_comm;
  int next_pid;
};

std::vector<std::uint8_t> switch_record(const Binding& b, const Switch& s, int common_pid) {
  RawRecord r(b.raw);
  r.set_int("common_pid", static_cast<std::uint64_t>(common_pid));
  r.set_str("prev_comm", s.prev_comm).set_int("prev_pid", static_cast<std::uint64_t>(s.prev_pid));
  r.set_int("prev_prio", 120).set_int("prev_state", s.prev_state);
  r.set_str("next_comm", s.next_comm).set_int("next_pid", static_cast<std::uint64_t>(s.next_pid));
  r.set_int("next_prio", 120);
  return r.bytes();
}

TEST(Subbuf, HeaderPageGivesTheKernelsLongSize) {
  EXPECT_EQ(long_size_of("linux-2.6.36"), 8u);
  EXPECT_EQ(long_size_of("linux-6.18"), 8u);
  EXPECT_EQ(long_size_of("linux-32bit-alt"), 4u);
  EXPECT_EQ(header_page_long_size("garbage"), 0u);
}

// Every fixture kernel's header_event, and the running kernel's, describes
// the event header the walk knows; changed ones are refused, by the line.
TEST(Subbuf, HeaderEventDescribesTheHeaderTheWalkKnows) {
  auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  for (const auto& kernel : fixture_kernels()) {
    std::string text = text_of(testing::fixture_dir(kernel) + "/events/header_event");
    ASSERT_FALSE(text.empty()) << kernel;
    EXPECT_EQ(header_event_mismatch(text), "") << kernel;
  }
  std::string live = text_of("/sys/kernel/tracing/events/header_event");
  if (!live.empty()) {
    EXPECT_EQ(header_event_mismatch(live), "");
  }
  const std::string today = text_of(testing::fixture_dir("linux-6.18") + "/events/header_event");
  auto changed = [&](const std::string& from, const std::string& to) {
    std::string t = today;
    auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return header_event_mismatch(t.replace(at, from.size(), to));
  };
  EXPECT_EQ(changed("27 bits", "26 bits"), "time_delta  :   26 bits");
  EXPECT_EQ(changed("type == 29", "type == 28"), "padding     : type == 28");
  EXPECT_EQ(changed("data max type_len  == 28", "data max type_len  == 27"), "data max type_len  == 27");
  EXPECT_EQ(changed("\ttime_extend : type == 30\n", ""), "no \"time_extend : type == 30\" line");
  EXPECT_EQ(changed("\tarray       :   32 bits\n", "\tarray       :   32 bits\n\tflags       :    1 bits\n"),
            "flags       :    1 bits");
  EXPECT_NE(header_event_mismatch(""), "");
}

// The task-state letters follow each kernel's own __print_flags table.
TEST(Projection, SchedSwitchOnEveryFixtureKernel) {
  struct Case {
    const char* kernel;
    std::vector<std::pair<std::uint64_t, char>> states;
  } cases[] = {
      {"linux-2.6.36", {{0, 'R'}, {1, 'S'}, {2, 'D'}, {4, 'T'}, {16, 'Z'}, {64, 'x'}, {128, 'W'}, {3, 'S'}, {256, 'R'}}},
      {"linux-6.18", {{0, 'R'}, {1, 'S'}, {2, 'D'}, {0x10, 'X'}, {0x20, 'Z'}, {0x80, 'I'}, {0x100, 'R'}, {0x101, 'S'}, {0x6, 'D'}}},
      {"linux-32bit-alt", {{0, 'R'}, {1, 'D'}, {2, 'S'}, {0x10, 'K'}, {0x20, 'X'}, {0x40, 'Z'}, {0x100, 'I'}, {0x200, 'R'}, {0x3, 'D'}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.kernel);
    ResolvedFixture fx(c.kernel);
    const Binding* b = fx.binding("sched_switch");
    ASSERT_NE(b, nullptr) << fx.reason("sched_switch");
    unsigned ls = long_size_of(c.kernel);
    SubbufBuilder page(ls, 1000000000ull);
    std::vector<Switch> sw;
    for (std::size_t i = 0; i < c.states.size(); ++i)
      sw.push_back({i % 2 ? "bash" : "kworker/0:1H-kblockd", static_cast<int>(100 + i), c.states[i].first,
                    i % 2 ? "swapper/1" : "exactly15chars_", static_cast<int>(200 + i)});
    for (std::size_t i = 0; i < sw.size(); ++i) page.event(switch_record(*b, sw[i], 100 + static_cast<int>(i)), 1000);
    CollectSink sink = walk(page.build(), ls);
    ASSERT_EQ(sink.items.size(), sw.size());

    Projection p = Projection::compile(*b);
    EXPECT_EQ(p.raw_id(), b->raw.id);
    EXPECT_EQ(p.stable_id(), 1u);
    EXPECT_EQ(p.payload_size(), 44u);
    std::vector<std::uint8_t> out(p.payload_size(), 0xee);
    for (std::size_t i = 0; i < sw.size(); ++i) {
      const auto& rec = sink.items[i];
      EXPECT_EQ(rec.ts, 1000000000ull + 1000 * (i + 1));
      p.project(rec.raw.data(), static_cast<std::uint32_t>(rec.raw.size()), out.data());
      StableView v{*b, out.data()};
      // A 16-byte kernel comm keeps 15 characters and a NUL.
      std::string want_prev = std::string(sw[i].prev_comm).substr(0, 15);
      EXPECT_EQ(v.text("prev_comm"), want_prev);
      EXPECT_EQ(v.str("prev_comm"), want_prev + std::string(16 - want_prev.size(), '\0'));
      EXPECT_EQ(v.text("next_comm"), sw[i].next_comm);
      EXPECT_EQ(v.num<std::int32_t>("prev_pid"), sw[i].prev_pid);
      EXPECT_EQ(v.num<std::int32_t>("next_pid"), sw[i].next_pid);
      EXPECT_EQ(v.num<char>("prev_state"), c.states[i].second) << "state 0x" << std::hex << c.states[i].first;
      EXPECT_EQ(p.pid(rec.raw.data(), static_cast<std::uint32_t>(rec.raw.size())), 100 + static_cast<int>(i));
      // Padding between fields (none here but the tail) stays zero.
      EXPECT_EQ(out[37], 0);
      EXPECT_EQ(out[38], 0);
      EXPECT_EQ(out[39], 0);
    }
  }
}

TEST(Projection, DataLocCommsOn32BitAlt) {
  ResolvedFixture fx("linux-32bit-alt");
  const Binding* b = fx.binding("sched_switch");
  ASSERT_NE(b, nullptr);
  Projection p = Projection::compile(*b);
  EXPECT_EQ(p.ops()[0].kind, Projection::OpKind::BytesDataLoc);
  auto raw = switch_record(*b, {"a-much-longer-than-16-comm", 7, 2, "", 0}, 7);
  SubbufBuilder page(4, 5);
  page.event(raw, 0);
  CollectSink sink = walk(page.build(), 4);
  ASSERT_EQ(sink.items.size(), 1u);
  std::vector<std::uint8_t> out(p.payload_size());
  p.project(sink.items[0].raw.data(), static_cast<std::uint32_t>(sink.items[0].raw.size()), out.data());
  StableView v{*b, out.data()};
  EXPECT_EQ(v.str("prev_comm"), std::string("a-much-longer-t") + '\0');
  EXPECT_EQ(v.str("next_comm"), std::string(16, '\0'));
  EXPECT_EQ(v.num<char>("prev_state"), 'S');
}

TEST(Projection, FourByteLongIsSignExtendedIntoS64) {
  ResolvedFixture fx("linux-32bit-alt");
  const Binding* b = fx.binding("sys_enter");
  ASSERT_NE(b, nullptr);
  RawRecord r(b->raw);
  r.set_int("id", static_cast<std::uint64_t>(-1));
  for (unsigned i = 0; i < 6; ++i) r.set_int("args", i == 5 ? 0xffffffffull : i + 1, i);
  SubbufBuilder page(4, 0);
  page.event(r.bytes());
  CollectSink sink = walk(page.build(), 4);
  ASSERT_EQ(sink.items.size(), 1u);
  Projection p = Projection::compile(*b);
  std::vector<std::uint8_t> out(p.payload_size());
  p.project(sink.items[0].raw.data(), static_cast<std::uint32_t>(sink.items[0].raw.size()), out.data());
  StableView v{*b, out.data()};
  EXPECT_EQ(v.num<std::int64_t>("id"), -1);
  for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(v.num<std::uint64_t>("args", i), i + 1);
  // unsigned long is zero-extended.
  EXPECT_EQ(v.num<std::uint64_t>("args", 5), 0xffffffffull);

  // sys_exit: a 4-byte ret of -EINTR.
  const Binding* x = fx.binding("sys_exit");
  ASSERT_NE(x, nullptr);
  RawRecord rx(x->raw);
  rx.set_int("id", 4).set_int("ret", static_cast<std::uint64_t>(-4));
  Projection px = Projection::compile(*x);
  std::vector<std::uint8_t> ox(px.payload_size());
  px.project(rx.bytes().data(), static_cast<std::uint32_t>(rx.bytes().size()), ox.data());
  StableView vx{*x, ox.data()};
  EXPECT_EQ(vx.num<std::int64_t>("ret"), -4);
  EXPECT_EQ(vx.num<std::int64_t>("id"), 4);
}

TEST(Projection, NarrowingAndUnsignedWidening) {
  // A synthetic binding: u8 from a signed 8-byte field, s16 from an unsigned
  // 2-byte one, int from an unsigned int, u64[3] from an s16[2] array.
  RawEvent raw;
  raw.system = "t";
  raw.name = "e";
  raw.id = 9;
  raw.common_fields = {{"common_type", "unsigned short", 0, 2, 2, false},
                       {"common_pid", "int", 4, 4, 4, true}};
  raw.fields = {{"a", "long", 8, 8, 8, true},
                {"b", "u16", 16, 2, 2, false},
                {"c", "unsigned int", 20, 4, 4, false}};
  RawField arr{"d", "s16", 24, 4, 2, true};
  arr.shape = FieldShape::Array;
  arr.count = 2;
  raw.fields.push_back(arr);
  Catalog cat;
  CatalogError err;
  ASSERT_TRUE(parse_catalog("STABLE_EVENT(e, t:e, id=5,\n __field(u8, a) = a\n __field(s16, b) = b\n"
                            " __field(int, c) = c\n __array(u64, d, 3) = d\n)\n",
                            "test", cat, err))
      << err.str();
  Binding b;
  std::string why;
  ASSERT_TRUE(bind_stable_event(cat.events[0], [&](const RawEventName&, std::string&) { return &raw; }, b, why))
      << why;
  RawRecord r(raw);
  r.set_int("a", 0x1234567890abcdefull).set_int("b", 0xfffe).set_int("c", 0xffffffffu);
  r.set_int("d", static_cast<std::uint64_t>(-2), 0).set_int("d", 3, 1);
  Projection p = Projection::compile(b);
  std::vector<std::uint8_t> out(p.payload_size());
  p.project(r.bytes().data(), static_cast<std::uint32_t>(r.bytes().size()), out.data());
  StableView v{b, out.data()};
  EXPECT_EQ(v.num<std::uint8_t>("a"), 0xef);
  EXPECT_EQ(v.num<std::int16_t>("b"), -2);  // stable s16 holds the low 16 bits
  EXPECT_EQ(v.num<std::int32_t>("c"), -1);
  EXPECT_EQ(v.num<std::uint64_t>("d", 0), static_cast<std::uint64_t>(-2));  // raw s16 sign-extends
  EXPECT_EQ(v.num<std::uint64_t>("d", 1), 3u);
  EXPECT_EQ(v.num<std::uint64_t>("d", 2), 0u);  // missing element
}

TEST(Projection, LongDynamicStringIsTruncatedToTheStableArray) {
  for (const char* kernel : {"linux-6.18", "linux-32bit-alt"}) {
    SCOPED_TRACE(kernel);
    ResolvedFixture fx(kernel);
    const Binding* b = fx.binding("sched_process_exec");
    ASSERT_NE(b, nullptr);
    std::string path = "/usr/lib/" + std::string(300, 'x') + "/bin/true";
    RawRecord r(b->raw);
    r.set_str("filename", path).set_int("pid", 42).set_int("old_pid", 41);
    unsigned ls = long_size_of(kernel);
    SubbufBuilder page(ls, 0);
    page.event(r.bytes());  // > 112 bytes: the length-word form
    CollectSink sink = walk(page.build(), ls);
    ASSERT_EQ(sink.items.size(), 1u);
    Projection p = Projection::compile(*b);
    std::vector<std::uint8_t> out(p.payload_size());
    p.project(sink.items[0].raw.data(), static_cast<std::uint32_t>(sink.items[0].raw.size()), out.data());
    StableView v{*b, out.data()};
    EXPECT_EQ(v.str("filename"), path.substr(0, 127) + '\0');
    EXPECT_EQ(v.num<std::int32_t>("pid"), 42);
    EXPECT_EQ(v.num<std::int32_t>("old_pid"), 41);
  }
}

// A raw event t:e (id 3: common_type, common_pid, then `fields` from
// offset 8) and the stable event e (id 5) of `catalog_fields` bound to it.
struct SyntheticEvent {
  RawEvent raw;
  Catalog catalog;  // the binding points into it
  Binding binding;
};
::testing::AssertionResult bind_synthetic(const std::vector<RawField>& fields, const std::string& catalog_fields,
                                          SyntheticEvent& out) {
  out.raw.system = "t";
  out.raw.name = "e";
  out.raw.id = 3;
  out.raw.common_fields = {{"common_type", "unsigned short", 0, 2, 2, false}, {"common_pid", "int", 4, 4, 4, true}};
  out.raw.fields = fields;
  CatalogError err;
  if (!parse_catalog("STABLE_EVENT(e, t:e, id=5,\n" + catalog_fields + ")\n", "test", out.catalog, err))
    return ::testing::AssertionFailure() << err.str();
  std::string why;
  const RawEvent* raw = &out.raw;
  if (!bind_stable_event(out.catalog.events[0], [raw](const RawEventName&, std::string&) { return raw; }, out.binding, why))
    return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

RawField dyn_char_field(const char* name, std::uint32_t offset, std::uint32_t size, DynLoc loc) {
  RawField f{name, "char", offset, size, 1, false};
  f.shape = FieldShape::DynArray;
  f.loc = loc;
  return f;
}

TEST(Projection, RelLocAndTailStrings) {
  SyntheticEvent e;
  ASSERT_TRUE(bind_synthetic({dyn_char_field("r", 8, 4, DynLoc::RelLoc), dyn_char_field("t", 12, 0, DynLoc::Tail)},
                             " __array(char, r, 8) = r\n __array(char, t, 8) = t\n", e));
  const Binding& b = e.binding;
  Projection p = Projection::compile(b);
  EXPECT_EQ(p.ops()[0].kind, Projection::OpKind::BytesRelLoc);
  EXPECT_EQ(p.ops()[1].kind, Projection::OpKind::BytesTail);
  // Record: header(8) | rel_loc word @8 | tail @12: "tailtext-long" | rel string "rel"
  std::vector<std::uint8_t> rec(12, 0);
  std::string t = "tailtext-long";
  rec.insert(rec.end(), t.begin(), t.end());
  rec.push_back(0);
  std::uint32_t at = static_cast<std::uint32_t>(rec.size());
  std::string s = "rel";
  rec.insert(rec.end(), s.begin(), s.end());
  rec.push_back(0);
  std::uint32_t word = (4u << 16) | (at - 12u);  // relative to the end of the word (8 + 4)
  std::memcpy(rec.data() + 8, &word, 4);
  std::vector<std::uint8_t> out(p.payload_size());
  p.project(rec.data(), static_cast<std::uint32_t>(rec.size()), out.data());
  StableView v{b, out.data()};
  EXPECT_EQ(v.str("r"), std::string("rel") + std::string(5, '\0'));
  // The tail runs to the end of the record; it stops at its NUL.
  EXPECT_EQ(v.str("t"), std::string("tailtex") + '\0');
}

// Tail strings into char arrays of 8-byte multiples (copied 16 bytes at a
// time, then 8) and of other sizes: every string length, NUL position and
// record end around the array's size gives the string's first bytes up to
// its NUL, at most M-1, then NULs -- as a byte-by-byte copy would.
TEST(Projection, WideCharArraysMatchAByteByByteCopy) {
  for (std::size_t m : {16u, 20u, 24u, 32u, 40u, 48u, 56u, 64u}) {
    SCOPED_TRACE(m);
    SyntheticEvent e;
    ASSERT_TRUE(bind_synthetic({dyn_char_field("t", 8, 0, DynLoc::Tail)},
                               " __array(char, t, " + std::to_string(m) + ") = t\n", e));
    const Binding& b = e.binding;
    Projection p = Projection::compile(b);
    for (std::size_t body = 0; body <= m + 20; ++body) {
      for (std::size_t nul : {std::size_t(0), body / 3, body > 0 ? body - 1 : 0, body, m - 1, m, std::size_t(1000)}) {
        std::vector<std::uint8_t> rec(8 + body + 64, 0xee);  // 0xee: bytes past the record
        for (std::size_t i = 0; i < body; ++i) rec[8 + i] = static_cast<std::uint8_t>(i == nul ? 0 : 'a' + i % 26);
        std::vector<std::uint8_t> out(p.payload_size(), 0x55);
        p.project(rec.data(), static_cast<std::uint32_t>(8 + body), out.data());
        std::string want;
        for (std::size_t i = 0; i < body && i < m - 1 && rec[8 + i]; ++i) want += static_cast<char>(rec[8 + i]);
        want.resize(m, '\0');
        ASSERT_EQ(std::string(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m)), want)
            << "body " << body << " nul at " << nul;
      }
    }
  }
}

// Events of every mix of field kinds -- char[16], u32, u64, u16, u8, a task
// state -- in counts around the limits of the fast paths with the counts
// built in: project() gives what the op-by-op path gives, byte for byte,
// for records of random bytes with NULs here and there.
TEST(Projection, EveryShapeMatchesTheOpByOpPath) {
  std::mt19937 rng(7);
  struct Kind { const char* raw_type; std::uint32_t size, count; const char* decl; };
  const Kind kinds[] = {{"char", 16, 16, "__array(char, %s, 16) = %s"},
                        {"u32", 4, 1, "__field(u32, %s) = %s"},
                        {"u64", 8, 1, "__field(u64, %s) = %s"},
                        {"u16", 2, 1, "__field(u16, %s) = %s"},
                        {"u8", 1, 1, "__field(u8, %s) = %s"}};
  int shapes = 0;
  for (int n16 = 0; n16 <= 3; ++n16)
    for (int n32 = 0; n32 <= 5; ++n32)
      for (int n64 = 0; n64 <= 3; ++n64)
        for (int n16b = 0; n16b <= 1; ++n16b)
          for (int n8 = 0; n8 <= 2; ++n8)
            for (int state = 0; state <= 1; ++state) {
              const int counts[] = {n16, n32, n64, n16b, n8};
              // Raw fields in a shuffled order, each at its natural alignment.
              std::vector<std::pair<int, int>> order;  // kind, index
              for (int k = 0; k < 5; ++k)
                for (int i = 0; i < counts[k]; ++i) order.emplace_back(k, i);
              std::shuffle(order.begin(), order.end(), rng);
              std::vector<RawField> fields;
              std::string decls;
              std::uint32_t off = 8;
              if (state) {
                fields.push_back({"st", "long", off, 8, 8, true});
                off += 8;
              }
              for (auto [k, i] : order) {
                const Kind& kd = kinds[k];
                std::string name = std::string(kd.raw_type) + "_" + std::to_string(i);
                std::uint32_t align = kd.count > 1 ? 1 : kd.size;
                off = (off + align - 1) / align * align;
                RawField f{name, kd.raw_type, off, kd.size, kd.size / kd.count, false};
                if (kd.count > 1) {
                  f.shape = FieldShape::Array;
                  f.count = kd.count;
                }
                fields.push_back(f);
                off += kd.size;
                char line[128];
                std::snprintf(line, sizeof line, kd.decl, name.c_str(), name.c_str());
                decls += std::string(" ") + line + "\n";
              }
              if (state) decls += " __field(char, st) = task_state(st)\n";
              if (decls.empty()) continue;
              SyntheticEvent e;
              if (state) e.raw.print_flags["st"] = {{0x01, "S"}, {0x02, "D"}, {0x04, "T"}};
              ASSERT_TRUE(bind_synthetic(fields, decls, e)) << decls;
              const Projection p = Projection::compile(e.binding);
              ++shapes;
              for (int round = 0; round < 20; ++round) {
                std::vector<std::uint8_t> rec(off);
                for (auto& byte : rec) byte = rng() % 4 == 0 ? 0 : static_cast<std::uint8_t>(rng());
                std::vector<std::uint8_t> fast(p.payload_size(), 0xee), each(p.payload_size(), 0x55);
                p.project(rec.data(), static_cast<std::uint32_t>(rec.size()), fast.data());
                p.project_checked(rec.data(), static_cast<std::uint32_t>(rec.size()), each.data());
                ASSERT_EQ(fast, each) << decls;
              }
            }
  EXPECT_GT(shapes, 700);
}

// A string at the record's end into a char[M] (M a multiple of 8 above 16:
// trace_marker's text) beside fixed fields, as ftrace:print has them: the
// tail strings' own loop in project() gives what the op-by-op path gives,
// for every length of the tail, and reads no byte past the record (each
// record is a heap block of its exact size, for ASan).
TEST(Projection, TailStringsBesideFixedFieldsMatchTheOpByOpPath) {
  std::mt19937 rng(11);
  for (std::size_t m : {24u, 32u, 64u}) {
    SCOPED_TRACE(m);
    SyntheticEvent e;
    ASSERT_TRUE(bind_synthetic({{"ip", "unsigned long", 8, 8, 8, false}, dyn_char_field("buf", 16, 0, DynLoc::Tail)},
                               " __field(u64, ip) = ip\n __array(char, text, " + std::to_string(m) + ") = buf\n", e));
    const Projection p = Projection::compile(e.binding);
    for (std::size_t body = 0; body <= m + 20; ++body) {
      for (int round = 0; round < 8; ++round) {
        const std::size_t len = 16 + body;
        std::unique_ptr<std::uint8_t[]> rec(new std::uint8_t[len]);
        for (std::size_t i = 0; i < len; ++i) rec[i] = rng() % 8 == 0 ? 0 : static_cast<std::uint8_t>('a' + rng() % 26);
        std::vector<std::uint8_t> fast(p.payload_size(), 0xee), each(p.payload_size(), 0x55);
        p.project(rec.get(), static_cast<std::uint32_t>(len), fast.data());
        p.project_checked(rec.get(), static_cast<std::uint32_t>(len), each.data());
        ASSERT_EQ(fast, each) << "body " << body;
        std::string want;
        for (std::size_t i = 16; i < len && i - 16 < m - 1 && rec[i]; ++i) want += static_cast<char>(rec[i]);
        want.resize(m, '\0');
        StableView v{e.binding, fast.data()};
        ASSERT_EQ(v.str("text"), want) << "body " << body;
      }
    }
  }
}

// Every prefix of a record projects without reading past it; what is cut
// off comes out zero.
TEST(Projection, TruncatedRecordsGiveZeroedFields) {
  for (const auto& kernel : fixture_kernels()) {
    SCOPED_TRACE(kernel);
    ResolvedFixture fx(kernel);
    for (const auto& b : fx.resolution.available) {
      SCOPED_TRACE(b.event->name);
      RawRecord r(b.raw);
      for (const auto& f : b.raw.fields) {
        if (f.elem_bytes == 1 && f.shape != FieldShape::Scalar) r.set_str(f.name, "some-text-that-is-long-enough-to-truncate");
        else if (f.shape == FieldShape::Scalar) r.set_int(f.name, 0x7f);
      }
      Projection p = Projection::compile(b);
      const auto& full = r.bytes();
      std::vector<std::uint8_t> whole(p.payload_size());
      p.project(full.data(), static_cast<std::uint32_t>(full.size()), whole.data());
      for (std::size_t len = 0; len <= full.size(); ++len) {
        // A heap copy of exactly `len` bytes, so ASan catches any over-read.
        std::unique_ptr<std::uint8_t[]> cut(new std::uint8_t[len ? len : 1]);
        std::memcpy(cut.get(), full.data(), len);
        std::vector<std::uint8_t> out(p.payload_size(), 0xee);
        p.project(cut.get(), static_cast<std::uint32_t>(len), out.data());
        for (std::size_t i = 0; i < out.size(); ++i)
          ASSERT_TRUE(out[i] == 0 || out[i] == whole[i]) << "len " << len << " byte " << i;
      }
      std::vector<std::uint8_t> out(p.payload_size(), 0xee);
      p.project(full.data(), 0, out.data());
      EXPECT_EQ(out, std::vector<std::uint8_t>(p.payload_size(), 0));
    }
  }
}

TEST(Projection, DataLocPointingOutsideTheRecordIsZero) {
  ResolvedFixture fx("linux-32bit-alt");
  const Binding* b = fx.binding("sched_switch");
  ASSERT_NE(b, nullptr);
  auto raw = switch_record(*b, {"prev", 1, 1, "next", 2}, 1);
  std::uint32_t bad = (16u << 16) | 0xfff0u;  // offset past the end
  std::memcpy(raw.data() + b->raw.field("prev_comm")->offset, &bad, 4);
  std::uint32_t longer = (0xffffu << 16) | 40u;  // length past the end: clamped
  std::memcpy(raw.data() + b->raw.field("next_comm")->offset, &longer, 4);
  Projection p = Projection::compile(*b);
  std::vector<std::uint8_t> out(p.payload_size(), 0xee);
  p.project(raw.data(), static_cast<std::uint32_t>(raw.size()), out.data());
  StableView v{*b, out.data()};
  EXPECT_EQ(v.str("prev_comm"), std::string(16, '\0'));
  EXPECT_EQ(v.num<std::int32_t>("prev_pid"), 1);
}

TEST(Subbuf, LostEventMarkersInTheSubbufHeader) {
  for (unsigned ls : {4u, 8u}) {
    SubbufBuilder stored(ls, 77);
    stored.event({1, 0, 0, 0, 0, 0, 0, 0}).missed(123);
    SubbufParser p(ls);
    auto page = stored.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), 123);
    EXPECT_EQ(p.timestamp(), 77u);
    EXPECT_EQ(p.data_size(), 12u);

    SubbufBuilder unknown(ls, 0);
    unknown.event({1, 0, 0, 0}).missed(-1);
    page = unknown.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), -1);

    // A time extend first: kbuffer_missed_events() would say 0 here; the
    // header says otherwise.
    SubbufBuilder extended(ls, 0);
    extended.time_extend(1ull << 30).event({1, 0, 0, 0}, 5).missed(9);
    page = extended.build();
    ASSERT_TRUE(p.load(page.data(), page.size()));
    EXPECT_EQ(p.missed(), 9);
    CollectSink sink;
    std::uint32_t from = 0;
    EXPECT_EQ(p.walk(sink, from, 10), 1u);
    EXPECT_EQ(sink.items[0].ts, (1ull << 30) + 5);
  }
}

TEST(Subbuf, MalformedSubbufIsRefusedOrCutShort) {
  SubbufBuilder b(8, 0);
  b.event(std::vector<std::uint8_t>(16, 1));
  auto page = b.build();
  std::uint64_t commit = 5000;  // larger than the sub-buffer
  std::memcpy(page.data() + 8, &commit, 8);
  SubbufParser p(8);
  EXPECT_FALSE(p.load(page.data(), page.size()));
  // An event whose length word runs past the commit: not delivered.
  SubbufBuilder c(8, 0);
  c.event(std::vector<std::uint8_t>(8, 1)).event(std::vector<std::uint8_t>(200, 2));
  page = c.build();
  commit = 12 + 20;  // the first event and part of the second
  std::memcpy(page.data() + 8, &commit, 8);
  ASSERT_TRUE(p.load(page.data(), page.size()));
  CollectSink sink;
  std::uint32_t from = 0;
  EXPECT_EQ(p.walk(sink, from, 10), 1u);
  EXPECT_EQ(from, p.data_size());
}

TEST(Subbuf, PaddingAndTimeExtendsAreSkipped) {
  SubbufBuilder b(8, 100);
  b.event({1, 0, 0, 0}, 1).padding(16).time_extend(1000).event({2, 0, 0, 0}, 2);
  CollectSink sink = walk(b.build(), 8);
  ASSERT_EQ(sink.items.size(), 2u);
  EXPECT_EQ(sink.items[0].ts, 101u);
  // kbuffer also adds the padding's time delta (the kernel writes 1 there).
  EXPECT_EQ(sink.items[1].ts, 1104u);
  EXPECT_EQ(sink.items[1].raw[0], 2);
}

int b0_id(const ResolvedFixture& fx) { return fx.resolution.available[0].raw.id & 0xff; }

TEST(Projection, ProjectionTableFindsByRawId) {
  for (const auto& kernel : fixture_kernels()) {
    ResolvedFixture fx(kernel);
    ProjectionTable t(fx.resolution.available);
    for (const auto& b : fx.resolution.available) {
      const Projection* p = t.find(b.raw.id);
      ASSERT_NE(p, nullptr) << kernel << " " << b.event->name;
      EXPECT_EQ(p->stable_id(), b.event->id);
      RawRecord r(b.raw);
      EXPECT_EQ(t.find_record(r.bytes().data(), static_cast<std::uint32_t>(r.bytes().size())), p);
      EXPECT_EQ(t.next_same_raw(*p), nullptr);
      EXPECT_LE(p->payload_size(), t.max_payload_size());
    }
    EXPECT_EQ(t.find(0), nullptr);
    EXPECT_EQ(t.find(-1), nullptr);
    EXPECT_EQ(t.find(1 << 20), nullptr);
    std::uint8_t one[2] = {static_cast<std::uint8_t>(b0_id(fx)), 0};
    EXPECT_EQ(t.find_record(one, 1), nullptr);
  }
}

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

}  // namespace
}  // namespace eventfs

namespace eventfs {
namespace {

// Garbage sub-buffers (whatever their commit word says, within the
// capacity) are walked without reading past the sub-buffer (followed by a
// PROT_NONE page), and every record handed out lies inside the committed
// data.
TEST(Subbuf, GarbageIsWalkedWithinBounds) {
  std::mt19937 rng(7);
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  auto* region = static_cast<std::uint8_t*>(mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(region, MAP_FAILED);
  ASSERT_EQ(mprotect(region + pg, pg, PROT_NONE), 0);
  for (unsigned ls : {4u, 8u}) {
    SubbufParser p(ls);
    for (int round = 0; round < 20000; ++round) {
      std::size_t cap = 64 + rng() % 256;
      std::uint8_t* at = region + pg - cap;  // then the guard page
      struct {
        std::uint8_t* p;
        std::uint8_t* get() const { return p; }
      } page{at};
      for (std::size_t i = 0; i < cap; ++i) page.p[i] = static_cast<std::uint8_t>(rng());
      std::uint64_t commit = rng() % 2 ? cap - 8 - ls - rng() % 8 : rng() % (cap - 8 - ls + 1);
      if (rng() % 4 == 0) commit |= 3ull << 30;
      std::memcpy(page.get() + 8, &commit, ls);
      if (!p.load(page.get(), cap)) continue;
      struct Check : RingSink {
        const std::uint8_t* lo;
        const std::uint8_t* hi;
        void record(std::uint64_t, const std::uint8_t* raw, std::uint32_t len) override {
          ASSERT_GE(raw, lo);
          ASSERT_LE(raw + len, hi);
        }
        void lost(std::uint64_t, std::uint64_t, bool) override {}
      } sink;
      sink.lo = page.get() + 8 + ls;
      sink.hi = sink.lo + p.data_size();
      std::uint32_t from = 0;
      p.walk(sink, from, 1000);
    }
  }
  munmap(region, 2 * pg);
}

}  // namespace
}  // namespace eventfs

namespace eventfs {
namespace {

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
  RawEvent raw;
  std::string why;
  ASSERT_TRUE(parse_raw_format("sched", fixed, raw, why)) << why << "\n" << fixed;
  ASSERT_NE(raw.field("common_padding"), nullptr);
  ASSERT_EQ(raw.field("common_pid")->offset, 8u);
  Catalog cat = testing::builtin_catalog();
  Binding b;
  ASSERT_TRUE(bind_stable_event(*cat.find("sched_switch"),
                                [&](const RawEventName&, std::string&) -> const RawEvent* { return &raw; }, b, why))
      << why;
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
