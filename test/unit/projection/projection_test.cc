// Projections of raw records into stable records over every fixture kernel:
// records are laid out as each kernel's format says, put in a sub-buffer the
// way the kernel writes one, walked and projected into stable records.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>

#include "projection/projection.h"
#include "support/fixture_kernels.h"
#include "support/synthetic.h"

namespace eventfs {
namespace {

using testing::CollectSink;
using testing::RawRecord;
using testing::ResolvedFixture;
using testing::StableView;
using testing::SubbufBuilder;
using testing::Switch;
using testing::fixture_kernels;
using testing::long_size_of;
using testing::switch_record;
using testing::walk;

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
  auto parsed = parse_catalog("STABLE_EVENT(e, t:e, id=5,\n __field(u8, a) = a\n __field(s16, b) = b\n"
                              " __field(int, c) = c\n __array(u64, d, 3) = d\n)\n",
                              "test", cat);
  ASSERT_TRUE(parsed) << parsed.error().str();
  auto bound = bind_stable_event(cat.events[0], [&](const RawEventName&) -> Result<const RawEvent*> { return &raw; });
  ASSERT_TRUE(bound) << bound.reason();
  const Binding& b = *bound;
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
  if (auto parsed = parse_catalog("STABLE_EVENT(e, t:e, id=5,\n" + catalog_fields + ")\n", "test", out.catalog); !parsed)
    return ::testing::AssertionFailure() << parsed.error().str();
  const RawEvent* raw = &out.raw;
  auto bound = bind_stable_event(out.catalog.events[0], [raw](const RawEventName&) -> Result<const RawEvent*> { return raw; });
  if (!bound) return ::testing::AssertionFailure() << bound.reason();
  out.binding = std::move(bound).value();
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



}  // namespace
}  // namespace eventfs
