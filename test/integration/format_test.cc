// The formats: the RFC's golden stable formats byte for byte on every kernel,
// stable formats identical across kernels, every raw event of the kernel in
// the format language and faithful to tracefs, and the catalog's events.
#include "support/mounted_eventfs.h"

namespace eventfs_it {
namespace {

// Reads `rel` from every listed mount, then checks the golden ones.
void ExpectGoldenFormats(const MountedEventfs& m, const std::string& what) {
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch) << what;
  EXPECT_EQ(slurp(m / "sched_migrate_task/format"), kGoldenSchedMigrateTask) << what;
}

TEST(GoldenFormat, LiveKernelPrintsTheRfcFormatsByteForByte) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ExpectGoldenFormats(m, "live tracefs");
}

class GoldenFormatOnFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenFormatOnFixture, PrintsTheRfcFormatsByteForByte) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture(GetParam())});
  ASSERT_TRUE(m.Start());
  ExpectGoldenFormats(m, GetParam());
}

std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenFormatOnFixture, ::testing::ValuesIn(fixture_names()), fixture_test_name);

TEST(StableFormats, AreByteIdenticalAcrossAllKernels) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  std::vector<std::pair<std::string, std::unique_ptr<MountedEventfs>>> mounts;
  mounts.emplace_back("live", std::make_unique<MountedEventfs>());
  for (const auto& f : fixture_names())
    mounts.emplace_back(f, std::make_unique<MountedEventfs>(std::vector<std::string>{"-o", "tracefs=" + fixture(f)}));
  for (auto& [name, m] : mounts) ASSERT_TRUE(m->Start()) << name;

  // event -> (kernel -> format)
  std::map<std::string, std::map<std::string, std::string>> formats;
  for (auto& [name, m] : mounts) {
    std::string avail;
    ASSERT_EQ(read_file(*m / "available_events", avail), 0) << name;
    auto events = split_lines(avail);
    EXPECT_GE(events.size(), 15u) << name << ": " << avail;
    for (const auto& ev : events) {
      std::string text;
      ASSERT_EQ(read_file(*m / (ev + "/format"), text), 0) << name << " " << ev;
      EXPECT_FALSE(text.empty()) << name << " " << ev;
      std::vector<std::string> bad;
      parse_format(text, &bad);
      EXPECT_TRUE(bad.empty()) << name << " " << ev << ": " << join(bad);
      formats[ev][name] = text;
    }
  }
  std::size_t compared = 0;
  for (const auto& [ev, by_kernel] : formats) {
    const auto& [first_kernel, first_text] = *by_kernel.begin();
    for (const auto& [kernel, text] : by_kernel) {
      EXPECT_EQ(text, first_text) << ev << ": " << kernel << " differs from " << first_kernel;
      ++compared;
    }
  }
  EXPECT_GE(formats.size(), default_catalog().size() - 1);
  EXPECT_GE(compared, 4u * 15u);
  // Both golden events are on all four.
  EXPECT_EQ(formats["sched_switch"].size(), 4u);
  EXPECT_EQ(formats["sched_migrate_task"].size(), 4u);
}

// ---------------------------------------------------------------------------
// raw/: every raw event of the kernel.

// One raw event's mount format checked against its tracefs format, field by
// field: same names in the same order (common_* left out), the right shape,
// size in bits, signedness.
void ExpectRawFormatMatchesTracefs(const std::string& tracefs_text, const std::string& mount_text,
                                   const std::string& what) {
  std::vector<std::string> bad;
  auto lines = parse_format(mount_text, &bad);
  ASSERT_TRUE(bad.empty()) << what << ": lines not in the format language:\n" << join(bad);
  std::vector<TracefsField> fields;
  for (auto& f : parse_tracefs_format(tracefs_text))
    if (!f.common) fields.push_back(f);
  std::vector<std::string> want_names, got_names;
  for (const auto& f : fields) want_names.push_back(f.name);
  for (const auto& l : lines) got_names.push_back(l.name);
  ASSERT_EQ(got_names, want_names) << what << "\n" << mount_text;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const TracefsField& t = fields[i];
    const FormatLine& l = lines[i];
    const std::string ctx = what + " field '" + t.decl + "' (size " + std::to_string(t.size) + ")";
    bool dynamic = t.decl.find("__data_loc") != std::string::npos || t.decl.find("__rel_loc") != std::string::npos;
    bool array = !dynamic && t.decl.find('[') != std::string::npos;
    EXPECT_EQ(l.is_signed, t.is_signed) << ctx;
    EXPECT_TRUE(l.align == 1 || l.align == 2 || l.align == 4 || l.align == 8) << ctx << " align " << l.align;
    if (dynamic) {
      EXPECT_EQ(l.kind, "dynarray") << ctx;
      EXPECT_EQ(l.loc, t.decl.find("__rel_loc") != std::string::npos ? "rel_loc" : "data_loc") << ctx;
    } else if (array && t.size == 0) {
      EXPECT_EQ(l.kind, "dynarray") << ctx;
      EXPECT_EQ(l.loc, "tail") << ctx;
    } else if (array) {
      EXPECT_EQ(l.kind, "array") << ctx;
      EXPECT_EQ(static_cast<unsigned long>(l.bits) * l.count, 8ul * t.size) << ctx;
    } else {
      EXPECT_EQ(l.kind, "field") << ctx;
      EXPECT_EQ(l.bits, 8 * t.size) << ctx;
    }
  }
}

// Lines of the daemon's stderr that report a format it could not parse.
std::vector<std::string> parse_error_lines(const std::string& err) {
  std::vector<std::string> out;
  for (const auto& line : split_lines(err))
    if (line.find("parse") != std::string::npos || line.find("raw/") != std::string::npos) out.push_back(line);
  return out;
}

TEST(RawMirror, EveryLiveRawEventIsPresentAndReadsInTheFormatLanguage) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  auto events = tracefs_events(kLiveTracefs);  // walked before the mount exists
  ASSERT_GT(events.size(), 100u);
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  std::size_t lines_checked = 0, failures = 0;
  for (const auto& ev : events) {
    std::string p = m / ("raw/" + ev + "/format");
    std::string text;
    int e = read_file(p, text);
    if (e != 0 || text.empty()) {
      ADD_FAILURE() << p << ": " << (e ? std::strerror(e) : "empty");
      if (++failures > 20) break;
      continue;
    }
    std::vector<std::string> bad;
    lines_checked += parse_format(text, &bad).size();
    if (!bad.empty()) {
      ADD_FAILURE() << p << ": not in the format language:\n" << join(bad);
      if (++failures > 20) break;
    }
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || static_cast<std::size_t>(st.st_size) != text.size()) {
      ADD_FAILURE() << p << ": st_size " << st.st_size << " but read " << text.size();
      if (++failures > 20) break;
    }
  }
  EXPECT_GT(lines_checked, events.size());
  EXPECT_EQ(parse_error_lines(m.Stderr()), std::vector<std::string>{}) << m.Stderr();
}

TEST(RawMirror, LiveRawFormatsMatchTracefsFieldByField) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  auto events = tracefs_events(kLiveTracefs);
  ASSERT_GT(events.size(), 100u);
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  // A few by hand, with what we know of them on any modern kernel.
  auto sw = parse_format(slurp(m / "raw/sched/sched_switch/format"));
  ASSERT_GE(sw.size(), 5u);
  EXPECT_EQ(sw[0].name, "prev_comm");
  EXPECT_EQ(sw[1].name, "prev_pid");
  EXPECT_EQ(sw[1].kind, "field");
  EXPECT_EQ(sw[1].type, "pid_t");
  EXPECT_EQ(sw[1].bits, 32u);
  EXPECT_EQ(sw[1].is_signed, 1);
  // And all of them against tracefs.
  int mismatched = 0;
  for (const auto& ev : events) {
    std::string tracefs_text, mount_text;
    if (read_file(std::string(kLiveTracefs) + "/events/" + ev + "/format", tracefs_text) != 0) continue;
    ASSERT_EQ(read_file(m / ("raw/" + ev + "/format"), mount_text), 0) << ev;
    const auto* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    int parts_before = result->total_part_count();
    ExpectRawFormatMatchesTracefs(tracefs_text, mount_text, ev);
    if (result->total_part_count() != parts_before && ++mismatched > 10) FAIL() << "too many mismatches";
  }
  EXPECT_EQ(parse_error_lines(m.Stderr()), std::vector<std::string>{}) << m.Stderr();
}

class RawMirrorOnFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(RawMirrorOnFixture, EveryRawEventMatchesItsFormatFile) {
  EVENTFS_REQUIRE_ROOT();
  const std::string root = fixture(GetParam());
  auto events = tracefs_events(root);
  ASSERT_GE(events.size(), 15u);
  MountedEventfs m({"-o", "tracefs=" + root});
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(list_dir(m / "raw"), list_dir(root + "/events", true));
  for (const auto& ev : events) {
    std::string mount_text;
    ASSERT_EQ(read_file(m / ("raw/" + ev + "/format"), mount_text), 0) << ev;
    EXPECT_FALSE(mount_text.empty()) << ev;
    ExpectRawFormatMatchesTracefs(slurp(root + "/events/" + ev + "/format"), mount_text, GetParam() + " " + ev);
  }
  EXPECT_EQ(m.Stderr(), "");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RawMirrorOnFixture, ::testing::ValuesIn(fixture_names()), fixture_test_name);

// ---------------------------------------------------------------------------
// The catalog's events: available, unavailable (with why), ids.

// available_events is exactly the catalog events whose raw event exists (in
// name order), unavailable_events names every other one with a reason, and
// every available event's id is the catalog's.
void ExpectCatalogResolution(const MountedEventfs& m, const std::string& tracefs_root) {
  auto catalog = default_catalog();
  ASSERT_EQ(catalog.size(), 16u) << "default.catalog changed: update this test's expectations";
  std::set<std::string> expected = expected_available(catalog, tracefs_root);
  std::string want;
  for (const auto& e : expected) want += e + "\n";
  EXPECT_EQ(slurp(m / "available_events"), want);

  std::string unavailable;
  ASSERT_EQ(read_file(m / "unavailable_events", unavailable), 0);
  std::set<std::string> unavailable_names;
  static const std::regex line_re("^(\\w+): (\\S.*)$");
  for (const auto& line : split_lines(unavailable)) {
    std::smatch mt;
    ASSERT_TRUE(std::regex_match(line, mt, line_re)) << "bad unavailable_events line: " << line;
    unavailable_names.insert(mt[1]);
  }
  std::set<std::string> all;
  for (const auto& e : catalog) all.insert(e.name);
  std::set<std::string> rest;
  std::set_difference(all.begin(), all.end(), expected.begin(), expected.end(), std::inserter(rest, rest.end()));
  EXPECT_EQ(unavailable_names, rest);

  for (const auto& e : catalog) {
    std::string id;
    int err = read_file(m / (e.name + "/id"), id);
    if (expected.count(e.name)) {
      EXPECT_EQ(err, 0) << e.name;
      EXPECT_EQ(id, std::to_string(e.id) + "\n") << e.name;
    } else {
      EXPECT_EQ(err, ENOENT) << e.name << " is unavailable but has an id file";
    }
  }
}

TEST(Catalog, LiveAvailableEventsAreTheCatalogEventsThisKernelHas) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ExpectCatalogResolution(m, kLiveTracefs);
  EXPECT_EQ(slurp(m / "sched_switch/id"), "1\n");
  EXPECT_EQ(slurp(m / "sched_migrate_task/id"), "2\n");
}

class CatalogOnFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(CatalogOnFixture, AvailableEventsAreTheCatalogEventsTheKernelHas) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture(GetParam())});
  ASSERT_TRUE(m.Start());
  ExpectCatalogResolution(m, fixture(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CatalogOnFixture, ::testing::ValuesIn(fixture_names()), fixture_test_name);

TEST(Catalog, OldKernelSaysWhySchedProcessExecIsMissing) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture("linux-2.6.36")});
  ASSERT_TRUE(m.Start());
  std::string text = slurp(m / "unavailable_events");
  EXPECT_TRUE(std::regex_match(text, std::regex("sched_process_exec: \\S[^\n]*\n"))) << text;
  EXPECT_NE(text.find("sched_process_exec", std::string("sched_process_exec: ").size()), std::string::npos)
      << "the reason should name the missing raw event: " << text;
  EXPECT_EQ(slurp(m / "available_events").find("sched_process_exec"), std::string::npos);
  struct stat st {};
  errno = 0;
  EXPECT_NE(::stat((m / "sched_process_exec").c_str(), &st), 0);
  EXPECT_EQ(errno, ENOENT);
  // The other events are all there, with the golden formats.
  ExpectGoldenFormats(m, "linux-2.6.36");
}

}  // namespace
}  // namespace eventfs_it
