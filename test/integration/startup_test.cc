// Start-up and shutdown: every refused start is one line on stderr, a
// non-zero exit and no mount; custom catalogs; background mode; signals.
#include "support/mounted_eventfs.h"

namespace eventfs_it {
namespace {

// The daemon's exit, output and the mount table after a start that must fail.
struct Refusal {
  RunResult r;
  bool mounted = false;
};

Refusal RunRefused(std::vector<std::string> args, const std::string& mount_point, const std::string& cwd = "") {
  Refusal f;
  // Never the default instance name, which a daemon someone else runs may hold.
  args.insert(args.begin(), {kBinary, "-o", "instance=eventfs-it-refused-" + std::to_string(::getpid())});
  f.r = run(args, 10s, cwd);
  f.mounted = mounted_at(mount_point);
  if (f.mounted) force_unmount(mount_point);  // do not leave it behind
  return f;
}

// Exited non-zero, stdout empty, stderr is exactly one line containing every
// needle, and no mount appeared.
void ExpectRefused(const Refusal& f, const std::vector<std::string>& needles, bool one_line = true) {
  EXPECT_FALSE(f.r.timed_out) << "the daemon started instead of refusing: " << f.r.describe();
  EXPECT_TRUE(f.r.exited()) << f.r.describe();
  EXPECT_NE(f.r.exit_code(), 0) << f.r.describe();
  EXPECT_FALSE(f.mounted) << "a mount appeared: " << f.r.describe();
  EXPECT_EQ(f.r.out, "") << f.r.describe();
  for (const auto& n : needles) EXPECT_NE(f.r.err.find(n), std::string::npos) << "no '" << n << "' in: " << f.r.err;
  if (one_line) {
    EXPECT_EQ(std::count(f.r.err.begin(), f.r.err.end(), '\n'), 1) << "not one line: " << f.r.err;
    EXPECT_TRUE(!f.r.err.empty() && f.r.err.back() == '\n') << f.r.err;
  }
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

constexpr const char* kGoodCatalog = "STABLE_EVENT(task_switch, sched:sched_switch, __field(pid_t, pid) = next_pid)\n";

class StartupFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    EVENTFS_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    mnt_ = dir_ / "mnt";
    ASSERT_EQ(::mkdir(mnt_.c_str(), 0755), 0);
  }
  // A catalog file in the temp dir.
  std::string Catalog(const std::string& name, const std::string& text) {
    std::string p = dir_ / name;
    EXPECT_TRUE(write_text_file(p, text));
    return p;
  }
  TempDir dir_;
  std::string mnt_;
};

TEST_F(StartupFailure, UnknownOption) {
  auto f = RunRefused({"-o", "bogus_option=1", mnt_, "-f"}, mnt_);
  // libfuse names the option in one line, and eventfs adds nothing to it.
  ExpectRefused(f, {"unknown option", "bogus_option"});
}

TEST_F(StartupFailure, NiceOutsideTheKernelsRange) {
  for (const char* v : {"abc", "-21", "20", "", "5x"}) {
    auto f = RunRefused({"-o", std::string("nice=") + v, mnt_, "-f"}, mnt_);
    ExpectRefused(f, {std::string("eventfs: nice=") + v + ": expected a number from -20 to 19"});
  }
}

TEST_F(StartupFailure, RtPriorityOutsideSchedFifosRange) {
  for (const char* v : {"abc", "0", "100", "", "-1", "5x"}) {
    auto f = RunRefused({"-o", std::string("rt=") + v, mnt_, "-f"}, mnt_);
    ExpectRefused(f, {std::string("eventfs: rt=") + v + ": expected a priority from 1 to 99"});
  }
}

TEST_F(StartupFailure, QueueSizeOutsideItsRange) {
  for (const char* v : {"abc", "255", "1048577", "", "-1", "8m"}) {
    auto f = RunRefused({"-o", std::string("queue_kb=") + v, mnt_, "-f"}, mnt_);
    ExpectRefused(f, {std::string("eventfs: queue_kb=") + v + ": expected a size in KiB from 256 to 1048576"});
  }
}

TEST_F(StartupFailure, UnknownReaderMode) {
  for (const char* v : {"splice", "", "MMAP", "mmapx"}) {
    auto f = RunRefused({"-o", std::string("reader=") + v, mnt_, "-f"}, mnt_);
    ExpectRefused(f, {std::string("eventfs: reader=") + v + ": expected auto, mmap or read"});
  }
}

TEST_F(StartupFailure, MissingMountPoint) {
  std::string nope = dir_ / "nope";
  auto f = RunRefused({nope, "-f"}, nope);
  ExpectRefused(f, {"eventfs: mount point " + nope, "No such file or directory"});
  EXPECT_FALSE(exists(nope));
}

TEST_F(StartupFailure, MountPointIsAFile) {
  std::string file = Catalog("plainfile", "not a directory\n");
  auto f = RunRefused({file, "-f"}, file);
  ExpectRefused(f, {"eventfs: mount point " + file, "Not a directory"});
}

TEST_F(StartupFailure, SysKernelEventsExplainsSysfsAndSuggestsElsewhere) {
  if (exists("/sys/kernel/events")) GTEST_SKIP() << "/sys/kernel/events exists on this kernel";
  auto f = RunRefused({"/sys/kernel/events", "-f"}, "/sys/kernel/events");
  ExpectRefused(f, {"/sys/kernel/events", "sysfs"});
  const std::string& e = f.r.err;
  bool suggests = e.find("elsewhere") != std::string::npos || e.find("instead") != std::string::npos ||
                  e.find("another") != std::string::npos;
  EXPECT_TRUE(suggests) << "no other place suggested: " << e;
  EXPECT_NE(e.find("mkdir"), std::string::npos) << e;
  EXPECT_FALSE(exists("/sys/kernel/events"));
}

TEST_F(StartupFailure, NonexistentTracefs) {
  auto f = RunRefused({"-o", "tracefs=/nonexistent", mnt_, "-f"}, mnt_);
  ExpectRefused(f, {"eventfs: ", "/nonexistent", "No such file or directory"});
}

TEST_F(StartupFailure, TracefsDirectoryWithoutEvents) {
  std::string empty = dir_ / "emptytracefs";
  ASSERT_EQ(::mkdir(empty.c_str(), 0755), 0);
  auto f = RunRefused({"-o", "tracefs=" + empty, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {"eventfs: ", empty, "events"});
}

TEST_F(StartupFailure, CatalogWithUnknownTypeNamesFileAndLine) {
  std::string cat = Catalog("bad.catalog",
                            "# line 1: a catalog with a mistake\n"
                            "STABLE_EVENT(broken, sched:sched_switch, id=1,\n"
                            "\t__field(flurb, pid) = next_pid\n"
                            ")\n");
  auto f = RunRefused({"-o", "catalog=" + cat, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cat + ":3: unknown type", "flurb"});
  EXPECT_TRUE(starts_with(f.r.err, cat + ":3: unknown type")) << f.r.err;
}

TEST_F(StartupFailure, CatalogSyntaxErrorNamesFileAndLine) {
  std::string cat = Catalog("syntax.catalog",
                            "STABLE_EVENT(broken, sched:sched_switch, id=1,\n"
                            "\t__field(pid_t, pid) = next_pid\n"
                            "\t__field(pid_t, other) next_pid\n"
                            ")\n");
  auto f = RunRefused({"-o", "catalog=" + cat, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cat + ":3: "});
  EXPECT_TRUE(starts_with(f.r.err, cat + ":3: ")) << f.r.err;
}

TEST_F(StartupFailure, CatalogDirectoryWithoutCatalogFiles) {
  std::string cdir = dir_ / "catalogs";
  ASSERT_EQ(::mkdir(cdir.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(cdir + "/README.txt", "STABLE_EVENT(x, sched:sched_switch, id=1, __field(int, a) = a)\n"));
  ASSERT_TRUE(write_text_file(cdir + "/events.catalog.orig", "nothing\n"));
  auto f = RunRefused({"-o", "catalog=" + cdir, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cdir, ".catalog"});
}

TEST_F(StartupFailure, DuplicateEventInOneFile) {
  std::string cat = Catalog("dup.catalog",
                            "STABLE_EVENT(twice, sched:sched_switch, id=1,\n"
                            "\t__field(pid_t, pid) = next_pid\n"
                            ")\n"
                            "\n"
                            "STABLE_EVENT(twice, sched:sched_switch, id=2,\n"
                            "\t__field(pid_t, pid) = next_pid\n"
                            ")\n");
  auto f = RunRefused({"-o", "catalog=" + cat, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cat + ":5: duplicate event", "twice", cat + ":1"});
  EXPECT_TRUE(starts_with(f.r.err, cat + ":5: duplicate event")) << f.r.err;
}

TEST_F(StartupFailure, DuplicateEventAcrossFilesOfACatalogDirectory) {
  std::string cdir = dir_ / "catalogs";
  ASSERT_EQ(::mkdir(cdir.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(cdir + "/a.catalog",
                              "STABLE_EVENT(same, sched:sched_switch, id=1,\n\t__field(pid_t, pid) = next_pid\n)\n"));
  ASSERT_TRUE(write_text_file(cdir + "/b.catalog",
                              "# second file\nSTABLE_EVENT(same, sched:sched_switch, id=2,\n\t__field(pid_t, pid) = next_pid\n)\n"));
  auto f = RunRefused({"-o", "catalog=" + cdir, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cdir + "/b.catalog:2: duplicate event", "same", cdir + "/a.catalog:1"});
}

TEST_F(StartupFailure, CatalogThatIsNotARegularFile) {
  // A device that never ends, and a directory with a catalog's name.
  auto f = RunRefused({"-o", "catalog=/dev/zero", mnt_, "-f"}, mnt_);
  ExpectRefused(f, {"/dev/zero: cannot read catalog: not a regular file"});
  std::string cdir = dir_ / "catalogs";
  ASSERT_EQ(::mkdir(cdir.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(cdir + "/a.catalog", kGoodCatalog));
  ASSERT_EQ(::mkdir((cdir + "/x.catalog").c_str(), 0755), 0);
  f = RunRefused({"-o", "catalog=" + cdir, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cdir + "/x.catalog: cannot read catalog: not a regular file"});
}

TEST_F(StartupFailure, CatalogWithANulByteOrANameLongerThanAFileName) {
  std::string nul = Catalog("nul.catalog", std::string("STABLE_EVENT(a, sched:sched_switch,\n __field(pid_t, p) = next_pid") +
                                                   '\0' + ")\n");
  auto f = RunRefused({"-o", "catalog=" + nul, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {nul + ":2: syntax error: unexpected character byte 0x00"});
  std::string long_name = Catalog("long.catalog", "\nSTABLE_EVENT(" + std::string(4200, 'e') +
                                                      ", sched:sched_switch,\n __field(pid_t, p) = next_pid)\n");
  f = RunRefused({"-o", "catalog=" + long_name, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {long_name + ":2: syntax error: a word of 4200 characters (names are at most 255)"});
}

TEST_F(StartupFailure, MissingCatalogFile) {
  std::string cat = dir_ / "nosuch.catalog";
  auto f = RunRefused({"-o", "catalog=" + cat, mnt_, "-f"}, mnt_);
  ExpectRefused(f, {cat, "No such file or directory"});
}

TEST_F(StartupFailure, NoMountPointGiven) {
  auto f = RunRefused({"-f"}, mnt_);
  ExpectRefused(f, {"no mount point"}, /*one_line=*/false);  // after the usage text
  EXPECT_TRUE(starts_with(split_lines(f.r.err).back(), "eventfs: ")) << f.r.err;
}

// ---------------------------------------------------------------------------
// Custom catalogs.

constexpr const char* kOneEventCatalog =
    "# one stable event over sched_switch, its fields renamed\n"
    "STABLE_EVENT(task_switch, sched:sched_switch, id=42,\n"
    "\t__array(char,  incoming, 16)   = next_comm\n"
    "\t__field(pid_t, incoming_pid)   = next_pid\n"
    "\t__field(char,  outgoing_state) = task_state(prev_state)\n"
    ")\n";

constexpr const char* kOneEventFormat =
    "\tarray:incoming\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:incoming_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:outgoing_state\ttype:char\tsize:8\talign:1\tsigned:1;\n";

void ExpectOnlyTheOneEvent(const MountedEventfs& m) {
  EXPECT_EQ(slurp(m / "available_events"), "task_switch\n");
  EXPECT_EQ(slurp(m / "unavailable_events"), "");
  EXPECT_TRUE(ListingMatches(list_dir(m.path()), {"README", "available_events", "header", "raw", "task_switch", "types", "unavailable_events"},
                             control_root_entries()));
  EXPECT_EQ(slurp(m / "task_switch/format"), kOneEventFormat);
  EXPECT_EQ(slurp(m / "task_switch/id"), "42\n");
  struct stat st {};
  errno = 0;
  EXPECT_NE(::stat((m / "sched_switch").c_str(), &st), 0);
  EXPECT_EQ(errno, ENOENT);
  // The raw mirror does not depend on the catalog.
  EXPECT_EQ(::stat((m / "raw/sched/sched_switch/format").c_str(), &st), 0);
}

TEST(CustomCatalog, OneEventFileOverTheLiveKernel) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  TempDir d;
  std::string cat = d / "one.catalog";
  ASSERT_TRUE(write_text_file(cat, kOneEventCatalog));
  MountedEventfs m({"-o", "catalog=" + cat});
  ASSERT_TRUE(m.Start());
  ExpectOnlyTheOneEvent(m);
}

TEST(CustomCatalog, OneEventFileOverEveryFixture) {
  EVENTFS_REQUIRE_ROOT();
  TempDir d;
  std::string cat = d / "one.catalog";
  ASSERT_TRUE(write_text_file(cat, kOneEventCatalog));
  for (const auto& fx : fixture_names()) {
    SCOPED_TRACE(fx);
    MountedEventfs m({"-o", "catalog=" + cat + ",tracefs=" + fixture(fx)});
    ASSERT_TRUE(m.Start());
    ExpectOnlyTheOneEvent(m);
  }
}

TEST(CustomCatalog, DirectoryMergesItsCatalogFilesOnly) {
  EVENTFS_REQUIRE_ROOT();
  TempDir d;
  std::string cdir = d / "catalogs";
  ASSERT_EQ(::mkdir(cdir.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(cdir + "/a.catalog", kOneEventCatalog));
  ASSERT_TRUE(write_text_file(cdir + "/b.catalog",
                              "STABLE_EVENT(cpu_moves, sched:sched_migrate_task, id=43,\n"
                              "\t__field(int, from) = orig_cpu\n\t__field(int, to) = dest_cpu\n)\n"));
  ASSERT_TRUE(write_text_file(cdir + "/notes.txt", "this is not a catalog ((( \n"));
  MountedEventfs m({"-o", "catalog=" + cdir + ",tracefs=" + fixture("linux-6.18")});
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(slurp(m / "available_events"), "cpu_moves\ntask_switch\n");
  EXPECT_EQ(slurp(m / "cpu_moves/format"),
            "\tfield:from\ttype:int\tsize:32\talign:4\tsigned:1;\n"
            "\tfield:to\ttype:int\tsize:32\talign:4\tsigned:1;\n");
  EXPECT_EQ(slurp(m / "cpu_moves/id"), "43\n");
  EXPECT_EQ(slurp(m / "task_switch/format"), kOneEventFormat);
}

TEST(CustomCatalog, EventsWithoutAnIdKeepTheirIdWhenOthersAreAdded) {
  EVENTFS_REQUIRE_ROOT();
  TempDir d;
  const std::string ev_x = "STABLE_EVENT(x_event, sched:sched_switch,\n\t__field(pid_t, pid) = next_pid\n)\n";
  const std::string ev_y = "STABLE_EVENT(y_event, sched:sched_wakeup,\n\t__field(pid_t, pid) = pid\n)\n";
  ASSERT_TRUE(write_text_file(d / "small.catalog", ev_x));
  ASSERT_TRUE(write_text_file(d / "big.catalog", ev_y + ev_x));
  std::string small_id, big_id;
  {
    MountedEventfs m({"-o", "catalog=" + (d / "small.catalog") + ",tracefs=" + fixture("linux-6.18")});
    ASSERT_TRUE(m.Start());
    small_id = slurp(m / "x_event/id");
  }
  {
    MountedEventfs m({"-o", "catalog=" + (d / "big.catalog") + ",tracefs=" + fixture("linux-6.18")});
    ASSERT_TRUE(m.Start());
    big_id = slurp(m / "x_event/id");
    EXPECT_NE(slurp(m / "y_event/id"), big_id);
  }
  EXPECT_EQ(small_id, big_id);
  ASSERT_TRUE(std::regex_match(small_id, std::regex("[0-9]+\n"))) << small_id;
  unsigned long id = std::stoul(small_id);
  EXPECT_GE(id, 0x80000000ul) << "derived ids must not collide with small explicit ones";
  EXPECT_LE(id, 0xfffffffful);
}

TEST(CustomCatalog, EventsTheKernelCannotSupplyAreUnavailableWithAReason) {
  EVENTFS_REQUIRE_ROOT();
  TempDir d;
  std::string cat = d / "mixed.catalog";
  ASSERT_TRUE(write_text_file(cat,
                              "STABLE_EVENT(no_such_field, sched:sched_switch, id=1,\n"
                              "\t__field(pid_t, pid) = nosuchfield\n)\n"
                              "STABLE_EVENT(no_such_event, nosuchsys:nosuchevent, id=2,\n"
                              "\t__field(pid_t, pid) = pid\n)\n"
                              "STABLE_EVENT(fine, sched:sched_switch, id=3,\n"
                              "\t__field(pid_t, pid) = nosuchfield | next_pid\n)\n"));
  MountedEventfs m({"-o", "catalog=" + cat + ",tracefs=" + fixture("linux-6.18")});
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(slurp(m / "available_events"), "fine\n");
  auto lines = split_lines(slurp(m / "unavailable_events"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(starts_with(lines[0], "no_such_field: ")) << lines[0];
  EXPECT_NE(lines[0].find("nosuchfield"), std::string::npos) << lines[0];
  EXPECT_TRUE(starts_with(lines[1], "no_such_event: ")) << lines[1];
  EXPECT_NE(lines[1].find("nosuchsys"), std::string::npos) << lines[1];
  EXPECT_TRUE(ListingMatches(list_dir(m.path()), {"README", "available_events", "fine", "header", "raw", "types", "unavailable_events"},
                             control_root_entries()));
}

// ---------------------------------------------------------------------------
// Background mode and shutdown.

// Makes this process the reaper of orphaned descendants for the scope, so a
// daemonized eventfs becomes our child and its exit status can be read.
struct SubreaperScope {
  SubreaperScope() { ok = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }
  ~SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  bool ok = false;
};

TEST(Daemon, BackgroundModeReturnsOnlyOnceMountedAndExitsOnFusermountU) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  SubreaperScope reaper;  // outlives the mount below
  MountOptions o;
  o.foreground = false;
  MountedEventfs m(o);
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(m.launcher_status(), 0);
  EXPECT_TRUE(m.mounted_on_return()) << "eventfs returned before the mount was up";
  ASSERT_GT(m.pid(), 0) << "no daemon process found for " << m.path();
  EXPECT_TRUE(process_alive(m.pid()));
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);

  RunResult u = run({"/usr/bin/fusermount3", "-u", m.path()}, 5s);
  ASSERT_EQ(u.exit_code(), 0) << u.describe();
  auto st = m.WaitExit(5s);
  ASSERT_TRUE(st.has_value()) << "the daemon did not exit after fusermount3 -u; its threads: " << thread_states(m.pid())
                              << "; stderr: " << m.Stderr();
  if (reaper.ok) {
    EXPECT_TRUE(m.is_child()) << "a subreaper should have inherited the daemon";
  }
  if (reaper.ok && m.is_child()) {
    EXPECT_TRUE(WIFEXITED(*st)) << *st;
    EXPECT_EQ(WEXITSTATUS(*st), 0);
  }
  EXPECT_FALSE(mounted_at(m.path()));
}

class DaemonSignal : public ::testing::TestWithParam<int> {};

TEST_P(DaemonSignal, ForegroundDaemonUnmountsAndExitsZero) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_EQ(slurp(m / "sched_migrate_task/format"), kGoldenSchedMigrateTask);
  auto st = m.SignalAndWait(GetParam(), 5s);
  ASSERT_TRUE(st.has_value()) << "no exit within 5 s of " << strsignal(GetParam())
                              << "; its threads: " << thread_states(m.pid()) << "; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st)) << "wait status " << *st;
  EXPECT_EQ(WEXITSTATUS(*st), 0);
  EXPECT_FALSE(mounted_at(m.path())) << "the mount outlived the daemon";
  EXPECT_EQ(m.Stderr(), "");
  // Its tracefs instance (if it made one) went with it.
  EXPECT_FALSE(exists(std::string(kLiveTracefs) + "/instances/" + m.instance()));
}

INSTANTIATE_TEST_SUITE_P(Signals, DaemonSignal, ::testing::Values(SIGTERM, SIGINT, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGTERM ? "SIGTERM" : i.param == SIGINT ? "SIGINT" : "SIGHUP");
                         });

TEST(Daemon, ForegroundDaemonExitsZeroWhenUnmountedFromOutside) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  RunResult u = run({"/usr/bin/fusermount3", "-u", m.path()}, 5s);
  ASSERT_EQ(u.exit_code(), 0) << u.describe();
  auto st = m.WaitExit(5s);
  ASSERT_TRUE(st.has_value()) << "the daemon did not exit after fusermount3 -u; its threads: " << thread_states(m.pid())
                              << "; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st)) << *st;
  EXPECT_EQ(WEXITSTATUS(*st), 0);
}

// `eventfs mnt` with a relative mount point: the daemon chdirs to / once
// mounted, so it must have made the path absolute first.
TEST(Daemon, RelativeMountPointIsUnmountedOnSigterm) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountOptions o;
  o.relative_mountpoint = true;
  MountedEventfs m(o);
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
  auto st = m.SignalAndWait(SIGTERM, 5s);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "wait status " << *st;
  EXPECT_FALSE(mounted_at(m.path())) << "SIGTERM left the mount behind; stderr: " << m.Stderr();
  EXPECT_EQ(m.Stderr(), "");
}

// `-o tracefs=DIR` with a relative DIR: raw/ is filled lazily, after the chdir.
TEST(Daemon, RelativeTracefsPathServesTheRawMirror) {
  EVENTFS_REQUIRE_ROOT();
  MountOptions o;
  o.args = {"-o", "tracefs=linux-6.18"};
  o.cwd = kFixturesDir;
  MountedEventfs m(o);
  ASSERT_TRUE(m.Start());
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
  const std::string root = fixture("linux-6.18");
  EXPECT_EQ(list_dir(m / "raw"), list_dir(root + "/events", true));
  EXPECT_EQ(list_dir(m / "raw/sched"), list_dir(root + "/events/sched", true));
  std::string text;
  EXPECT_EQ(read_file(m / "raw/sched/sched_switch/format", text), 0);
  EXPECT_NE(text.find("\tfield:next_pid\t"), std::string::npos) << text;
}

TEST(Daemon, SourceWithACommaIsTheFsname) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture("linux-6.18"), "events,stable"});
  ASSERT_TRUE(m.Start());
  auto e = mount_at(m.path());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->source, "events,stable");
}

}  // namespace
}  // namespace eventfs_it
