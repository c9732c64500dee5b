// The mount as a shell user sees it: the root listing, modes and sizes,
// errors for names that do not exist, and refused writes and namespace
// changes, compared with what tracefs itself answers.
#include <sys/stat.h>
#include <sys/statfs.h>

#include "support/mounted_eventfs.h"

namespace eventfs_it {
namespace {

// Stale mounts of crashed runs go first; a hung test ends the run.
const bool kRegistered = [] {
  ::testing::AddGlobalTestEnvironment(new StaleMountCleaner);
  ::testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
  return true;
}();

constexpr const char* kTracefsSchedSwitchDir = "/sys/kernel/tracing/events/sched/sched_switch";

std::set<std::string> to_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

TEST(Mount, MountinfoShowsFuseEventfs) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  auto e = mount_at(m.path());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->fstype, "fuse.eventfs");
  EXPECT_EQ(e->source, "eventfs");
  struct statfs sf {};
  ASSERT_EQ(::statfs(m.path().c_str(), &sf), 0) << std::strerror(errno);
  EXPECT_EQ(static_cast<unsigned long>(sf.f_type), 0x65735546ul);  // FUSE_SUPER_MAGIC
}

TEST(Mount, SourceArgumentIsTheFsname) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m({"stable-events"});
  ASSERT_TRUE(m.Start());
  auto e = mount_at(m.path());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->fstype, "fuse.eventfs");
  EXPECT_EQ(e->source, "stable-events");
}

TEST(Mount, RootListsFilesRawAndExactlyTheAvailableEvents) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  std::set<std::string> events = expected_available(default_catalog(), kLiveTracefs);
  ASSERT_GE(events.size(), 2u) << "the live kernel lacks even sched_switch and sched_migrate_task?";
  std::set<std::string> expected = {"README", "available_events", "unavailable_events", "header", "types", "raw"};
  expected.insert(events.begin(), events.end());
  // Exactly these, plus (over a real tracefs) the documented control files.
  EXPECT_TRUE(ListingMatches(list_dir(m.path()), expected, control_root_entries()));
  // Every event directory holds format and id, and nothing undocumented.
  for (const auto& ev : events)
    EXPECT_TRUE(ListingMatches(list_dir(m / ev), {"format", "id"}, control_event_entries())) << ev;
  // The README says what the files are.
  std::string readme = slurp(m / "README");
  EXPECT_NE(readme.find("available_events"), std::string::npos) << readme;
  EXPECT_NE(readme.find("raw/"), std::string::npos) << readme;
}

TEST(Mount, RawMirrorsEveryTracefsSystemAndEvent) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string events = std::string(kLiveTracefs) + "/events";
  auto systems = list_dir(events, true);
  EXPECT_EQ(list_dir(m / "raw"), systems);
  for (const char* sys : {"sched", "irq", "raw_syscalls"}) {
    EXPECT_EQ(list_dir(m / ("raw/" + std::string(sys))), list_dir(events + "/" + sys, true)) << sys;
  }
  EXPECT_TRUE(ListingMatches(list_dir(m / "raw/sched/sched_switch"), {"format"}, control_event_entries()));
}

TEST(Mount, StatGivesDirectories0755AndReadOnlyFiles0440WithTheirReadSize) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  for (const char* rel : {"", "raw", "raw/sched", "raw/sched/sched_switch", "sched_switch", "sched_migrate_task"}) {
    struct stat st {};
    std::string p = rel[0] ? m / rel : m.path();
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p << ": " << std::strerror(errno);
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << p;
    EXPECT_EQ(st.st_mode & 07777, 0755u) << p;
    EXPECT_EQ(st.st_uid, 0u) << p;
  }
  for (const char* rel : {"README", "available_events", "unavailable_events", "sched_switch/format",
                          "sched_switch/id", "sched_migrate_task/format", "sched_migrate_task/id",
                          "raw/sched/sched_switch/format", "raw/irq/irq_handler_entry/format",
                          "raw/raw_syscalls/sys_enter/format"}) {
    std::string p = m / rel;
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p << ": " << std::strerror(errno);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << p;
    EXPECT_EQ(st.st_mode & 07777, 0440u) << p;
    EXPECT_EQ(st.st_uid, 0u) << p;
    std::string text;
    ASSERT_EQ(read_file(p, text), 0) << p;
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), text.size()) << p;
  }
}

TEST(Mount, UnknownNamesAreEnoentLikeTracefs) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  // tracefs's own answer, for comparison.
  struct stat st {};
  errno = 0;
  ASSERT_NE(::stat("/sys/kernel/tracing/events/nosuchsys", &st), 0);
  const int tracefs_errno = errno;
  EXPECT_EQ(tracefs_errno, ENOENT);
  for (const char* rel : {"nosuch", "raw/nosuchsys", "raw/sched/nosuch", "sched_switch/nosuch",
                          "raw/sched/sched_switch/nosuch", "nosuch/format", "raw/nosuchsys/x/format"}) {
    std::string p = m / rel;
    errno = 0;
    EXPECT_NE(::stat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(errno, tracefs_errno) << "stat " << p << ": " << std::strerror(errno);
    errno = 0;
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_LT(fd, 0) << p;
    if (fd >= 0) ::close(fd);
    EXPECT_EQ(errno, ENOENT) << "open " << p << ": " << std::strerror(errno);
  }
  // A file is not a directory.
  errno = 0;
  EXPECT_NE(::stat((m / "sched_switch/format/x").c_str(), &st), 0);
  EXPECT_EQ(errno, ENOTDIR);
}

// open(O_WRONLY|O_TRUNC) then write(): what a root shell's `echo x > file` does.
struct WriteOutcome {
  int open_errno = 0;
  int write_errno = 0;
  ssize_t written = -1;
};

WriteOutcome try_write(const std::string& path) {
  WriteOutcome o;
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    o.open_errno = errno;
    return o;
  }
  errno = 0;
  o.written = ::write(fd, "x\n", 2);
  if (o.written < 0) o.write_errno = errno;
  ::close(fd);
  return o;
}

TEST(Mount, WritingAReadOnlyFileFailsWithEinvalLikeTracefs) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  // tracefs, on its own format file: the open succeeds for root, the write fails.
  const std::string tracefs_format = std::string(kTracefsSchedSwitchDir) + "/format";
  const std::string tracefs_before = slurp(tracefs_format);
  WriteOutcome t = try_write(tracefs_format);
  EXPECT_EQ(t.open_errno, 0) << std::strerror(t.open_errno);
  EXPECT_EQ(t.written, -1);
  EXPECT_EQ(t.write_errno, EINVAL) << std::strerror(t.write_errno);
  EXPECT_EQ(slurp(tracefs_format), tracefs_before);

  for (const char* rel : {"sched_switch/format", "sched_switch/id", "README", "available_events",
                          "unavailable_events", "raw/sched/sched_switch/format"}) {
    std::string p = m / rel;
    std::string before = slurp(p);
    WriteOutcome o = try_write(p);
    EXPECT_EQ(o.open_errno, t.open_errno) << p << ": " << std::strerror(o.open_errno);
    EXPECT_EQ(o.written, -1) << p;
    EXPECT_EQ(o.write_errno, t.write_errno) << p << ": " << std::strerror(o.write_errno);
    EXPECT_EQ(o.write_errno, EINVAL) << p;
    // O_TRUNC changed nothing.
    EXPECT_EQ(slurp(p), before) << p;
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), before.size()) << p;
  }
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
}

// One namespace-changing operation, run in directory `dir` on its file `file`.
struct NamespaceOp {
  const char* what;
  int expected;  // 0: only compared with tracefs
  int (*run)(const std::string& dir, const std::string& file);
  void (*undo)(const std::string& dir, const std::string& file);  // if it ever succeeds
};

int errno_of(int rc) { return rc == 0 ? 0 : errno; }

const NamespaceOp kNamespaceOps[] = {
    {"creat", EACCES,
     [](const std::string& d, const std::string&) {
       int fd = ::creat((d + "/newfile").c_str(), 0644);
       if (fd >= 0) ::close(fd);
       return fd >= 0 ? 0 : errno;
     },
     [](const std::string& d, const std::string&) { ::unlink((d + "/newfile").c_str()); }},
    {"mkdir", EPERM, [](const std::string& d, const std::string&) { return errno_of(::mkdir((d + "/newdir").c_str(), 0755)); },
     [](const std::string& d, const std::string&) { ::rmdir((d + "/newdir").c_str()); }},
    {"unlink", EPERM, [](const std::string&, const std::string& f) { return errno_of(::unlink(f.c_str())); },
     [](const std::string&, const std::string&) {}},
    {"rename", EPERM,
     [](const std::string& d, const std::string& f) { return errno_of(::rename(f.c_str(), (d + "/renamed").c_str())); },
     [](const std::string& d, const std::string& f) { ::rename((d + "/renamed").c_str(), f.c_str()); }},
    {"rmdir", 0, [](const std::string& d, const std::string&) { return errno_of(::rmdir(d.c_str())); },
     [](const std::string&, const std::string&) {}},
    {"symlink", 0, [](const std::string& d, const std::string&) { return errno_of(::symlink("format", (d + "/link").c_str())); },
     [](const std::string& d, const std::string&) { ::unlink((d + "/link").c_str()); }},
    {"link", 0, [](const std::string& d, const std::string& f) { return errno_of(::link(f.c_str(), (d + "/hardlink").c_str())); },
     [](const std::string& d, const std::string&) { ::unlink((d + "/hardlink").c_str()); }},
    {"mknod", 0, [](const std::string& d, const std::string&) { return errno_of(::mknod((d + "/node").c_str(), S_IFREG | 0600, 0)); },
     [](const std::string& d, const std::string&) { ::unlink((d + "/node").c_str()); }},
};

// trace_clock is the instance's: the clock the records' time stamps are in.
TEST(Mount, TraceClockIsTheInstancesAsTracefsShowsIt) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  ASSERT_FALSE(m.instance().empty());
  const std::string ours = slurp(m / "trace_clock");
  EXPECT_EQ(ours, slurp(std::string(kLiveTracefs) + "/instances/" + m.instance() + "/trace_clock"));
  EXPECT_NE(ours.find("[local]"), std::string::npos) << "the kernel's default clock: " << ours;
  // Read-only, as the mount's other read-only files: the write fails, the clock stays.
  WriteOutcome w = try_write(m / "trace_clock");
  EXPECT_EQ(w.written, -1);
  EXPECT_EQ(w.write_errno, EINVAL) << std::strerror(w.write_errno);
  EXPECT_EQ(slurp(m / "trace_clock"), ours);
}

TEST(Mount, NamespaceChangesAreRefusedLikeTracefs) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string tdir = kTracefsSchedSwitchDir;
  const auto root_before = list_dir(m.path());
  for (const auto& op : kNamespaceOps) {
    errno = 0;
    int tracefs_errno = op.run(tdir, tdir + "/format");
    if (tracefs_errno == 0) op.undo(tdir, tdir + "/format");
    ASSERT_NE(tracefs_errno, 0) << op.what << " succeeded on tracefs (undone)";
    if (op.expected) {
      EXPECT_EQ(tracefs_errno, op.expected) << op.what << " on tracefs: " << std::strerror(tracefs_errno);
    }
    for (const char* rel : {"sched_switch", "raw/sched/sched_switch"}) {
      std::string dir = m / rel;
      int e = op.run(dir, dir + "/format");
      if (e == 0) op.undo(dir, dir + "/format");
      EXPECT_EQ(e, tracefs_errno) << op.what << " in " << dir << ": got " << std::strerror(e)
                                  << ", tracefs gives " << std::strerror(tracefs_errno);
    }
    // In the root, on README.
    int e = op.run(m.path(), m / "README");
    if (e == 0) op.undo(m.path(), m / "README");
    if (std::string(op.what) != "rmdir") {  // rmdir of a mount's root is EBUSY in the VFS
      EXPECT_EQ(e, tracefs_errno) << op.what << " in the root: " << std::strerror(e);
    }
  }
  // Nothing changed.
  EXPECT_EQ(list_dir(m.path()), root_before);
  EXPECT_TRUE(ListingMatches(list_dir(m / "sched_switch"), {"format", "id"}, control_event_entries()));
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_TRUE(exists(tdir + "/format"));
  EXPECT_FALSE(exists(tdir + "/renamed") || exists(tdir + "/newdir") || exists(tdir + "/newfile"));
}

// ---------------------------------------------------------------------------
// Through the shell's own tools.

TEST(ShellView, LsLongShowsModesSizesAndNames) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  int rc = -1;
  std::string out = shell("ls -l " + m.path(), &rc);
  ASSERT_EQ(rc, 0) << out;
  std::set<std::string> names;
  for (const auto& line : split_lines(out)) {
    if (line.rfind("total", 0) == 0) continue;
    std::istringstream f(line);
    std::string mode, links, owner, group, size, mon, day, time, name;
    ASSERT_TRUE(f >> mode >> links >> owner >> group >> size >> mon >> day >> time >> name) << line;
    names.insert(name);
    EXPECT_EQ(owner, "root") << line;
    struct stat st {};
    ASSERT_EQ(::stat((m / name).c_str(), &st), 0) << name;
    if (S_ISDIR(st.st_mode)) {
      EXPECT_EQ(mode, "drwxr-xr-x") << line;
    } else if (control_root_entries().count(name)) {
      // error_log is 0640 and trace_pipe 0440 on tracefs; streams are not read here.
      EXPECT_TRUE(mode == "-rw-r-----" || mode == "-r--r-----") << line;
    } else {
      EXPECT_EQ(mode, "-r--r-----") << line;
      EXPECT_EQ(size, std::to_string(slurp(m / name).size())) << line;
    }
  }
  EXPECT_EQ(names, to_set(list_dir(m.path())));
  EXPECT_TRUE(names.count("README") && names.count("raw") && names.count("sched_switch")) << out;
}

TEST(ShellView, FindListsTheSameRawFormatsAsTracefs) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  int rc1 = -1, rc2 = -1;
  std::string in_mount = shell("cd " + m.path() + "/raw && find . -name format | sort", &rc1);
  std::string in_tracefs =
      shell("cd /sys/kernel/tracing/events && find . -mindepth 3 -maxdepth 3 -name format | sort", &rc2);
  ASSERT_EQ(rc1, 0);
  ASSERT_EQ(rc2, 0);
  EXPECT_GT(split_lines(in_tracefs).size(), 100u);
  EXPECT_TRUE(in_mount == in_tracefs) << "mount:\n" << head_lines(in_mount) << "\ntracefs:\n" << head_lines(in_tracefs);
  // Modes as on tracefs: formats 0440; only the documented control files 0640;
  // nothing else.
  std::string bad_formats = shell("find " + m.path() + " -name format ! -perm 0440", &rc1);
  EXPECT_EQ(rc1, 0);
  EXPECT_TRUE(bad_formats.empty()) << head_lines(bad_formats);
  std::string other = shell("find " + m.path() + " ! -type d ! -perm 0440 ! -perm 0640", &rc1);
  EXPECT_TRUE(other.empty()) << head_lines(other);
  std::string writable = shell("find " + m.path() + " -perm 0640 ! -name enable ! -name filter ! -name trigger" +
                                   " ! -name error_log ! -name variables",
                               &rc1);
  EXPECT_TRUE(writable.empty()) << head_lines(writable);
}

TEST(ShellView, GrepRecursiveOverAFixtureFindsExactlyTheSchedSwitchFormats) {
  EVENTFS_REQUIRE_ROOT();
  MountedEventfs m({"-o", "tracefs=" + fixture("linux-6.18")});
  ASSERT_TRUE(m.Start());
  int rc = -1;
  std::string out = shell("grep -rl prev_comm " + m.path() + " | sort", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, m / "raw/sched/sched_switch/format\n" + m / "sched_switch/format\n");
  // grep reads every file of the mount without an error.
  std::string errors = shell("grep -r -q nosuchtextanywhere " + m.path() + " 2>&1; echo rc=$?", &rc);
  EXPECT_EQ(errors, "rc=1\n");  // 1: read everything, matched nothing; 2 would be a read error
  std::string count = shell("grep -c . " + m.path() + "/available_events", &rc);
  EXPECT_EQ(count, std::to_string(default_catalog().size()) + "\n");
  std::string golden = shell("grep -h pid " + m.path() + "/sched_switch/format", &rc);
  EXPECT_EQ(golden,
            "\tfield:prev_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
            "\tfield:next_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n");
}

TEST(ShellView, CatPrintsTheGoldenFormatAndFailsOnMissingFiles) {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  int rc = -1;
  EXPECT_EQ(shell("cat " + m.path() + "/sched_switch/format", &rc), kGoldenSchedSwitch);
  EXPECT_EQ(rc, 0);
  std::string out = shell("cat " + m.path() + "/sched_switch/nosuch 2>&1", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
  out = shell("/bin/echo 1 2>&1 > " + m.path() + "/sched_switch/format", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("Invalid argument"), std::string::npos) << out;
}

}  // namespace
}  // namespace eventfs_it
