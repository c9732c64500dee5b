// The catalog language: good input parses into the promised declarations, and
// every kind of bad input stops with file:line: message.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "catalog/parser.h"

namespace eventfs {
namespace {

// Success, or the error's "file:line: message" as the failure.
::testing::AssertionResult Ok(const CatalogResult& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().str();
}

// The error of a result that must be one.
CatalogError ErrorOf(const CatalogResult& r) {
  EXPECT_FALSE(r) << "accepted";
  return r ? CatalogError{} : r.error();
}

Catalog parse_ok(std::string_view text) {
  Catalog c;
  EXPECT_TRUE(Ok(parse_catalog(text, "test.catalog", c)));
  return c;
}

CatalogError parse_bad(std::string_view text) {
  Catalog c;
  auto parsed = parse_catalog(text, "bad.catalog", c);
  EXPECT_FALSE(parsed) << "accepted:\n" << text;
  EXPECT_TRUE(c.events.empty());
  return parsed ? CatalogError{} : parsed.error();
}

TEST(CatalogParser, ParsesTheDesignExample) {
  Catalog c = parse_ok(R"(
STABLE_EVENT(sched_switch, sched:sched_switch,
	__array(char,  prev_comm, 16)  = prev_comm
	__field(pid_t, prev_pid)       = prev_pid
	__field(char,  prev_state)     = task_state(prev_state)
	__array(char,  next_comm, 16)  = next_comm
	__field(pid_t, next_pid)       = next_pid
)
)");
  ASSERT_EQ(c.events.size(), 1u);
  const StableEvent& e = c.events[0];
  EXPECT_EQ(e.name, "sched_switch");
  EXPECT_EQ(e.line, 2);
  ASSERT_EQ(e.sources.size(), 1u);
  EXPECT_EQ(e.sources[0], (RawEventName{"sched", "sched_switch"}));
  ASSERT_EQ(e.fields.size(), 5u);
  EXPECT_EQ(e.fields[0].decl.name, "prev_comm");
  EXPECT_EQ(e.fields[0].decl.shape, FieldShape::Array);
  EXPECT_EQ(e.fields[0].decl.count, 16u);
  EXPECT_EQ(e.fields[0].decl.type.name, "char");
  EXPECT_EQ(e.fields[1].decl.type.name, "pid_t");
  EXPECT_EQ(e.fields[1].decl.shape, FieldShape::Scalar);
  EXPECT_EQ(e.fields[2].sources[0].kind, FieldSource::Kind::TaskState);
  EXPECT_EQ(e.fields[2].sources[0].raw_field, "prev_state");
  EXPECT_EQ(e.fields[4].line, 7);
  EXPECT_FALSE(e.explicit_id);
  EXPECT_EQ(e.id, derived_event_id("sched_switch"));
  EXPECT_NE(e.id & 0x80000000u, 0u);
}

TEST(CatalogParser, AlternativesIdsCommentsAndMultiWordTypes) {
  Catalog c = parse_ok(R"(# a comment
// another
/* a block
   comment */
STABLE_EVENT(blk, block:block_rq_complete | block:block_rq_done, id=0x10,
	__field(unsigned long long, sector) = sector   # trailing comment
	__field(int, error) = error | errors
	__field(pid_t, pid) = common_pid
)
STABLE_EVENT(two, a:b, id=17, __field(u8, x) = y)
)");
  ASSERT_EQ(c.events.size(), 2u);
  const StableEvent& e = c.events[0];
  EXPECT_EQ(e.id, 16u);
  EXPECT_TRUE(e.explicit_id);
  ASSERT_EQ(e.sources.size(), 2u);
  EXPECT_EQ(e.sources[1], (RawEventName{"block", "block_rq_done"}));
  EXPECT_EQ(e.fields[0].decl.type.name, "unsigned long long");
  EXPECT_EQ(e.fields[0].decl.type.bits, 64u);
  ASSERT_EQ(e.fields[1].sources.size(), 2u);
  EXPECT_EQ(e.fields[1].sources[1].raw_field, "errors");
  EXPECT_EQ(e.fields[2].sources[0].raw_field, "common_pid");
  EXPECT_EQ(c.events[1].id, 17u);
  EXPECT_EQ(c.events[1].line, 10);
}

TEST(CatalogParser, DerivedIdsDoNotDependOnOtherEvents) {
  Catalog a = parse_ok("STABLE_EVENT(x, s:e, __field(int, v) = v)");
  Catalog b = parse_ok("STABLE_EVENT(w, s:e, __field(int, v) = v)\nSTABLE_EVENT(x, s:e, __field(int, v) = v)");
  EXPECT_EQ(a.events[0].id, b.events[1].id);
  EXPECT_NE(b.events[0].id, b.events[1].id);
}

TEST(CatalogParser, TheBuiltinCatalogParsesAndHasTheRequiredEvents) {
  Catalog c;
  ASSERT_TRUE(Ok(parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, c)));
  for (const char* name :
       {"sched_switch", "sched_migrate_task", "sched_wakeup", "sched_process_fork",
        "sched_process_exec", "sched_process_exit", "irq_handler_entry", "irq_handler_exit",
        "softirq_entry", "softirq_exit", "sys_enter", "sys_exit", "cpu_idle", "cpu_frequency",
        "block_rq_issue", "block_rq_complete"}) {
    const StableEvent* e = c.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_TRUE(e->explicit_id) << name << ": the default catalog's ids are ABI and explicit";
  }
}

TEST(CatalogParser, EnumFieldsNameTheirEnumerationAndKeepTheirIntegerType) {
  Catalog c = parse_ok(R"(
STABLE_EVENT(softirq_entry, irq:softirq_entry,
	__enum(unsigned int, vec, softirq_vec) = vec
	__enum(char, state, task_state)        = task_state(state)
	__field(int, other)                    = other
)
STABLE_EVENT(softirq_exit, irq:softirq_exit,
	__enum(unsigned int, vec, softirq_vec) = vec
)
)");
  ASSERT_EQ(c.events.size(), 2u);
  const StableEvent& e = c.events[0];
  ASSERT_EQ(e.fields.size(), 3u);
  EXPECT_EQ(e.fields[0].enum_name, "softirq_vec");
  EXPECT_EQ(e.fields[0].decl.shape, FieldShape::Scalar);
  EXPECT_EQ(e.fields[0].decl.type.name, "unsigned int");
  EXPECT_EQ(e.fields[1].enum_name, "task_state");
  EXPECT_EQ(e.fields[1].sources[0].kind, FieldSource::Kind::TaskState);
  EXPECT_EQ(e.fields[2].enum_name, "");
  EXPECT_EQ(c.events[1].fields[0].enum_name, "softirq_vec");
  // The format keeps the integer type: an enum is named in types/ only.
  EXPECT_EQ(render_format_line(e.fields[0].decl), "\tfield:vec\ttype:unsigned int\tsize:32\talign:4\tsigned:0;\n");
}

struct BadInput {
  const char* what;
  const char* text;
  int line;
  const char* message;  // a substring of the message
};

class CatalogParserRefuses : public ::testing::TestWithParam<BadInput> {};

TEST_P(CatalogParserRefuses, WithFileLineAndMessage) {
  const BadInput& b = GetParam();
  CatalogError err = parse_bad(b.text);
  EXPECT_EQ(err.file, "bad.catalog");
  EXPECT_EQ(err.line, b.line) << err.str();
  EXPECT_NE(err.message.find(b.message), std::string::npos) << err.str();
  EXPECT_EQ(err.str().rfind("bad.catalog:" + std::to_string(b.line) + ": ", 0), 0u) << err.str();
  EXPECT_EQ(err.str().find('\n'), std::string::npos) << "one line: " << err.str();
}

const BadInput kBadInputs[] = {
    {"unknown type", "STABLE_EVENT(a, s:e,\n __field(float, x) = x\n)", 2, "unknown type 'float'"},
    {"unknown multi-word type", "STABLE_EVENT(a, s:e,\n __field(unsigned float, x) = x)", 2,
     "unknown type 'unsigned float'"},
    {"struct type", "STABLE_EVENT(a, s:e,\n\n __array(struct foo, x, 2) = x)", 3, "unknown type"},
    {"duplicate event",
     "STABLE_EVENT(a, s:e, __field(int, x) = x)\nSTABLE_EVENT(a, s:f, __field(int, x) = x)", 2,
     "duplicate event 'a' (first declared at bad.catalog:1)"},
    {"duplicate field", "STABLE_EVENT(a, s:e,\n __field(int, x) = x\n __field(long, x) = y)", 3,
     "duplicate field 'x'"},
    {"duplicate id",
     "STABLE_EVENT(a, s:e, id=3, __field(int, x) = x)\nSTABLE_EVENT(b, s:e, id=3, __field(int, x) = x)",
     2, "duplicate id 3"},
    {"zero count", "STABLE_EVENT(a, s:e,\n __array(char, x, 0) = x)", 2, "bad count '0'"},
    {"huge count", "STABLE_EVENT(a, s:e,\n __array(char, x, 99999999) = x)", 2, "bad count"},
    {"symbolic count", "STABLE_EVENT(a, s:e,\n __array(char, x, TASK_COMM_LEN) = x)", 2,
     "bad count 'TASK_COMM_LEN'"},
    {"negative count", "STABLE_EVENT(a, s:e,\n __array(char, x, -1) = x)", 2, "unexpected character '-'"},
    {"array without count", "STABLE_EVENT(a, s:e,\n __array(char, x) = x)", 2, "expected ','"},
    {"field with count", "STABLE_EVENT(a, s:e,\n __field(char, x, 4) = x)", 2, "use __array"},
    {"missing field source", "STABLE_EVENT(a, s:e,\n __field(int, x)\n __field(int, y) = y)", 2,
     "missing source for field 'x'"},
    {"empty field source", "STABLE_EVENT(a, s:e,\n __field(int, x) =\n)", 3, "missing source for field 'x'"},
    {"missing event source", "STABLE_EVENT(a\n)", 2, "missing source for event 'a'"},
    {"raw source without system", "STABLE_EVENT(a, sched_switch,\n __field(int, x) = x)", 1,
     "bad raw event source 'sched_switch'"},
    {"unknown conversion", "STABLE_EVENT(a, s:e,\n __field(char, x) = to_upper(x))", 2,
     "unknown conversion 'to_upper'"},
    {"task_state into an int", "STABLE_EVENT(a, s:e,\n __field(int, x) = task_state(x))", 2,
     "must be a scalar char"},
    {"unknown keyword", "\nSTABLE_EVNT(a, s:e, __field(int, x) = x)", 2, "unknown keyword 'STABLE_EVNT'"},
    {"unknown field macro", "STABLE_EVENT(a, s:e,\n __string(x, y) = x)", 2, "unknown field macro '__string'"},
    {"no fields", "STABLE_EVENT(a, s:e,\n)", 1, "event 'a' has no fields"},
    {"unterminated event", "STABLE_EVENT(a, s:e,\n __field(int, x) = x\n", 3, "unexpected end of file"},
    {"unterminated comment", "STABLE_EVENT(a, s:e, __field(int, x) = x)\n/* open", 2,
     "unterminated comment"},
    {"stray character", "STABLE_EVENT(a, s:e,\n __field(int, x) = x;\n)", 2, "unexpected character ';'"},
    {"binary byte", "STABLE_EVENT(a, s:e,\n __field(int, x) = x\x01)", 2, "byte 0x01"},
    {"reserved common_ name", "STABLE_EVENT(a, s:e,\n __field(int, common_pid) = common_pid)", 2,
     "reserved"},
    {"bad id", "STABLE_EVENT(a, s:e, id=0, __field(int, x) = x)", 1, "bad id '0'"},
    {"id not a number", "STABLE_EVENT(a, s:e, id=seven, __field(int, x) = x)", 1, "bad id 'seven'"},
    {"missing open paren", "STABLE_EVENT a, s:e, __field(int, x) = x)", 1, "expected '('"},
    {"event name is a number", "STABLE_EVENT(42, s:e, __field(int, x) = x)", 1, "not a valid event name"},
    {"id out of range", "STABLE_EVENT(a, s:e, id=99999999999999999999999, __field(int, x) = x)", 1, "bad id"},
    {"count out of range", "STABLE_EVENT(a, s:e,\n __array(char, x, 99999999999999999999999) = x)", 2, "bad count"},
    {"reserved event name", "STABLE_EVENT(raw, s:e, __field(int, x) = x)", 1, "event name 'raw' is reserved"},
    {"record too large", "\nSTABLE_EVENT(big, s:e, __array(u8, b, 65536) = b\n __field(u64, ip) = ip)", 2,
     "a stable record holds at most 65512"},
    {"garbage after event", "STABLE_EVENT(a, s:e, __field(int, x) = x)\n)", 2, "expected STABLE_EVENT"},
    {"enum without a name", "STABLE_EVENT(a, s:e,\n __enum(int, x) = x)", 2, "expected the enumeration's name"},
    {"enum named like a type", "STABLE_EVENT(a, s:e,\n __enum(int, x, pid_t) = x)", 2,
     "enumeration name 'pid_t' is a type name"},
    {"enum over bool", "STABLE_EVENT(a, s:e,\n __enum(bool, x, flag) = x)", 2, "needs an integer type"},
    {"enum over two types", "STABLE_EVENT(a, s:e,\n __enum(int, x, k)= x\n __enum(u8, y, k) = y)", 3,
     "enumeration 'k' is over 'u8' here and over 'int' in a.x"},
    {"enum over two types in two events",
     "STABLE_EVENT(a, s:e, __enum(int, x, k) = x)\nSTABLE_EVENT(b, s:f,\n __enum(u32, x, k) = x)", 3,
     "over 'int' in a.x"},
    {"enum name not an identifier", "STABLE_EVENT(a, s:e,\n __enum(int, x, 9lives) = x)", 2,
     "not a valid enumeration name"},
};

INSTANTIATE_TEST_SUITE_P(BadInputs, CatalogParserRefuses, ::testing::ValuesIn(kBadInputs),
                         [](const auto& info) {
                           std::string n = info.param.what;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(CatalogParser, DuplicateAcrossFilesNamesBothFiles) {
  Catalog c;
  CatalogError err;
  ASSERT_TRUE(Ok(parse_catalog("STABLE_EVENT(a, s:e, __field(int, x) = x)", "one.catalog", c)));
  err = ErrorOf(parse_catalog("\n\nSTABLE_EVENT(a, s:e, __field(int, x) = x)", "two.catalog", c));
  EXPECT_EQ(err.str(), "two.catalog:3: duplicate event 'a' (first declared at one.catalog:1)");
  EXPECT_EQ(c.events.size(), 1u);
}

TEST(CatalogParser, ANulByteIsNamedInTheMessage) {
  using namespace std::string_view_literals;
  CatalogError err = parse_bad("STABLE_EVENT(a, s:e,\n __field(int, x) = x\0)"sv);
  EXPECT_EQ(err.str(), "bad.catalog:2: syntax error: unexpected character byte 0x00");
}

TEST(CatalogParser, NamesAreAtMostAFileNameLong) {
  const std::string longest(255, 'n'), too_long(256, 'n');
  Catalog c = parse_ok("STABLE_EVENT(" + longest + ", s:e, __field(int, " + longest + ") = " + longest + ")");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].name, longest);
  for (const std::string& text :
       {"STABLE_EVENT(" + too_long + ", s:e,\n __field(int, x) = x)",
        "STABLE_EVENT(a, s:e,\n __field(int, " + too_long + ") = x)",
        "STABLE_EVENT(a, s:e,\n __field(int, x) = " + std::string(4200, 'n') + ")"}) {
    CatalogError err = parse_bad(text);
    EXPECT_EQ(err.line, text.find(too_long) < text.find('\n') ? 1 : 2) << err.str();
    EXPECT_NE(err.message.find("names are at most 255"), std::string::npos) << err.str();
  }
}

class CatalogFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/eventfs-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

TEST_F(CatalogFiles, DirectoryIsReadInNameOrderAndOnlyCatalogFiles) {
  write("20-b.catalog", "STABLE_EVENT(b, s:e, __field(int, x) = x)");
  write("10-a.catalog", "STABLE_EVENT(a, s:e, __field(int, x) = x)");
  write("notes.txt", "this is not a catalog");
  Catalog c;
  ASSERT_TRUE(Ok(load_catalog(dir_, c)));
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].name, "a");
  EXPECT_EQ(c.events[1].name, "b");
  EXPECT_EQ(c.events[1].file, dir_ + "/20-b.catalog");
}

TEST_F(CatalogFiles, ErrorsNameTheFile) {
  write("x.catalog", "STABLE_EVENT(a, s:e,\n __field(nosuch, x) = x)");
  Catalog c;
  CatalogError err;
  err = ErrorOf(load_catalog(dir_, c));
  EXPECT_EQ(err.str(), dir_ + "/x.catalog:2: unknown type 'nosuch'");
  EXPECT_TRUE(c.events.empty());
}

TEST_F(CatalogFiles, EmptyDirectoryMissingFileAndEmptyFileAreRefused) {
  Catalog c;
  CatalogError err;
  err = ErrorOf(load_catalog(dir_, c));
  EXPECT_NE(err.str().find("no *.catalog files"), std::string::npos) << err.str();
  err = ErrorOf(load_catalog(dir_ + "/missing.catalog", c));
  EXPECT_NE(err.str().find("cannot read catalog"), std::string::npos) << err.str();
  write("empty.catalog", "# nothing here\n");
  err = ErrorOf(load_catalog(dir_ + "/empty.catalog", c));
  EXPECT_NE(err.str().find("declares no events"), std::string::npos) << err.str();
}

TEST_F(CatalogFiles, OnlyRegularFilesOfBoundedSizeAreRead) {
  Catalog c;
  CatalogError err;
  // A directory that has a catalog's name, in a catalog directory.
  write("a.catalog", "STABLE_EVENT(a, s:e, __field(int, x) = x)");
  std::filesystem::create_directory(dir_ + "/x.catalog");
  err = ErrorOf(load_catalog(dir_, c));
  EXPECT_EQ(err.str(), dir_ + "/x.catalog: cannot read catalog: not a regular file");
  // A device that never ends, and a FIFO that no one writes.
  err = ErrorOf(load_catalog("/dev/zero", c));
  EXPECT_EQ(err.str(), "/dev/zero: cannot read catalog: not a regular file");
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  err = ErrorOf(load_catalog(dir_ + "/fifo", c));
  EXPECT_EQ(err.str(), dir_ + "/fifo: cannot read catalog: not a regular file");
  // A file larger than any catalog: refused, not read into memory whole.
  {
    std::ofstream big(dir_ + "/big.catalog");
    std::string line = "# " + std::string(1021, '-') + "\n";
    for (int i = 0; i < 4097; ++i) big << line;
  }
  err = ErrorOf(load_catalog(dir_ + "/big.catalog", c));
  EXPECT_EQ(err.str(), dir_ + "/big.catalog: cannot read catalog: larger than 4194304 bytes");
  EXPECT_TRUE(c.events.empty());
}

}  // namespace
}  // namespace eventfs
