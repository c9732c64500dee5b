// A trace.dat made by eventfs-record's writers (dat_cpu_writer, dat_file,
// dat_format) from records of two stable events, read back through
// libtracecmd's installed read API and libtraceevent, as trace-cmd report
// reads it: every record's CPU, time, pid, event and field values, an enum
// printed by its label, a text field, task names from the saved cmdlines,
// a loss as the missed-events count, and an id past 16 bits mapped.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "layout_field.h"
#include "recorder/dat_cpu_writer.h"
#include "recorder/dat_file.h"
#include "recorder/dat_format.h"
#include "recorder/task_names.h"
#include "support/dat_reader.h"
#include "support/temp_dirs.h"

namespace eventfs::recorder {
namespace {

// ev_a (id 3): comm[16], pid, a task-state enum, a u64; ev_b (an id past
// 16 bits): one s64.
MountLayout two_events() {
  MountLayout l;
  l.mount = "/nowhere";
  Event a;
  a.name = "ev_a";
  a.id = 3;
  a.fields = {layout_field("comm", "char", 8, 16, 1, true, 0), layout_field("pid", "pid_t", 32, 0, 4, true, 16),
              layout_field("state", "task_state", 8, 0, 1, true, 20), layout_field("val", "u64", 64, 0, 8, false, 24)};
  a.size = 32;
  a.end = 32;
  Event b;
  b.name = "ev_b";
  b.id = 0x80001234u;
  b.fields = {layout_field("x", "s64", 64, 0, 8, true, 0)};
  b.size = b.end = 8;
  l.events = {a, b};
  NamedType st;
  st.name = "task_state";
  st.is_enum = true;
  st.bits = 8;
  st.is_signed = true;
  st.map = {{82, "R"}, {83, "S"}};
  st.fields = {"ev_a.state"};
  l.types["task_state"] = st;
  l.clock = "local";
  return l;
}

struct PayloadA {
  char comm[16];
  std::int32_t pid;
  char state;
  char pad[3];
  std::uint64_t val;
};
static_assert(sizeof(PayloadA) == 32);

PayloadA payload_a(const char* comm, std::int32_t pid, char state, std::uint64_t val) {
  PayloadA p{};
  std::strncpy(p.comm, comm, sizeof p.comm - 1);
  p.pid = pid;
  p.state = state;
  p.val = val;
  return p;
}

TEST(RecordDatFile, TraceCmdsReaderReadsBackEveryRecordItsValuesNamesAndLoss) {
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const MountLayout layout = two_events();
  auto ids = dat_event_ids(layout);
  ASSERT_TRUE(ids) << ids.reason();
  EXPECT_EQ(ids->at(3), 3);
  EXPECT_EQ(ids->at(0x80001234u), 0xffff);

  const std::size_t page = 4096;
  DatCpuWriter cpu0(layout, *ids, page), cpu1(layout, *ids, page);
  ASSERT_TRUE(cpu0.open(dir / "t.dat.cpu0"));
  ASSERT_TRUE(cpu1.open(dir / "t.dat.cpu1"));
  // CPU 0: 500 records of ev_a over several pages; CPU 1: ev_b, a loss, ev_b.
  for (int i = 0; i < 500; ++i) {
    PayloadA p = payload_a(i % 2 ? "efs-two" : "efs-one", 100 + i % 2, i % 3 ? 'S' : 'R', 1000u + i);
    ASSERT_TRUE(cpu0.add_event(5000 + 10ull * i, 3, 100 + i % 2, &p, sizeof p, 32, 32));
  }
  std::int64_t x = -5;
  ASSERT_TRUE(cpu1.add_event(6000, 0x80001234u, 7, &x, 8, 8, 8));
  ASSERT_TRUE(cpu1.add_lost(7000, 42));
  x = 6;
  ASSERT_TRUE(cpu1.add_event(7000, 0x80001234u, 7, &x, 8, 8, 8));
  ASSERT_TRUE(cpu0.finish());
  ASSERT_TRUE(cpu1.finish());
  EXPECT_GT(cpu0.packets(), 3u);

  DatContents c;
  c.page_size = page;
  for (const auto& e : layout.events) c.formats.push_back(dat_event_format(layout, e, ids->at(e.id)));
  TaskNames names(layout);
  names.merge(cpu0.task_names());
  names.merge(cpu1.task_names());
  c.cmdlines = names.cmdlines();
  EXPECT_EQ(c.cmdlines, "100 efs-one\n101 efs-two\n");
  c.trace_clock = "[local]\n";
  c.uname = "Linux test";
  c.version = "eventfs-record test";
  c.cpu_files = {cpu0.path(), cpu1.path()};
  const std::string path = dir / "t.dat";
  ASSERT_TRUE(write_trace_dat(path, c));
  EXPECT_FALSE(write_trace_dat(path, c)) << "an existing file is not overwritten";

  dat_reader* in = dat_reader_open(path.c_str());
  ASSERT_NE(in, nullptr) << "libtracecmd cannot open it";
  std::vector<dat_record> got;
  for (int cpu = 0; cpu < 2; ++cpu) {
    dat_record r;
    while (dat_reader_next(in, cpu, &r)) got.push_back(r);
  }
  EXPECT_STREQ(dat_reader_comm(in, 101), "efs-two");
  dat_reader_close(in);

  ASSERT_EQ(got.size(), 502u);
  for (int i = 0; i < 500; ++i) {
    const dat_record& r = got[static_cast<std::size_t>(i)];
    ASSERT_EQ(r.cpu, 0);
    EXPECT_EQ(r.ts, 5000 + 10ull * i);
    EXPECT_EQ(r.pid, 100 + i % 2);
    EXPECT_STREQ(r.name, "ev_a");
    const std::string want = std::string("comm=") + (i % 2 ? "efs-two" : "efs-one") +
                             " pid=" + std::to_string(100 + i % 2) + " state=" + (i % 3 ? "S" : "R") +
                             " val=" + std::to_string(1000 + i);
    EXPECT_EQ(std::string(r.info), want) << "record " << i;
  }
  EXPECT_STREQ(got[500].name, "ev_b");
  EXPECT_STREQ(got[500].info, "x=-5");
  EXPECT_EQ(got[500].missed, 0);
  EXPECT_STREQ(got[501].info, "x=6");
  EXPECT_EQ(got[501].ts, 7000u);
  EXPECT_EQ(got[501].missed, 42);
}

TEST(RecordDatFile, TheFormatTextIsTheKernelsLanguage) {
  const MountLayout layout = two_events();
  const std::string f = dat_event_format(layout, layout.events[0], 3);
  EXPECT_NE(f.find("name: ev_a\nID: 3\nformat:\n"), std::string::npos) << f;
  EXPECT_NE(f.find("\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"), std::string::npos) << f;
  EXPECT_NE(f.find("\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"), std::string::npos) << f;
  EXPECT_NE(f.find("\tfield:u64 val;\toffset:32;\tsize:8;\tsigned:0;\n"), std::string::npos) << f;
  EXPECT_NE(f.find("__print_symbolic(REC->state, { 82, \"R\" }, { 83, \"S\" })"), std::string::npos) << f;
}

TEST(RecordDatFile, IdsThatFitAreKeptAndOthersTakeTheHighestFree) {
  MountLayout l;
  for (std::uint32_t id : {0xffffu, 0x10000u, 7u, 0x80000001u}) {
    Event e;
    e.name = "e" + std::to_string(id);
    e.id = id;
    l.events.push_back(e);
  }
  auto ids = dat_event_ids(l);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->at(0xffffu), 0xffff);
  EXPECT_EQ(ids->at(7u), 7);
  EXPECT_EQ(ids->at(0x10000u), 0xfffe);
  EXPECT_EQ(ids->at(0x80000001u), 0xfffd);
}

}  // namespace
}  // namespace eventfs::recorder
