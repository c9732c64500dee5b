// eventfs installed the way a system administrator installs it: `meson install`
// into the real system paths, then mount(8) with every type that reaches the
// daemon (through /sbin/mount.eventfs and through Debian's mount.fuse3), an
// /etc/fstab line, the helper's option handling, a group of non-root readers,
// and pkg-config with the installed header. Uninstalled again at the end.
//
// Needs root, a live tracefs, mount(8) and mount.fuse3. Everything the tests
// change outside /tmp is undone whatever happens: the installation (uninstalled
// at the end of the suite), /etc/fstab (its lines removed), users and groups
// (named eventfs-it-*), mounts and tracefs instances (eventfs-it-*). A run that
// crashed leaves a marker (/run/eventfs-it-install) by which the next run
// knows the installed files are its own to replace.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <climits>
#include <functional>

#include "eventfs_config.h"
#include "support/mounted_eventfs.h"

namespace eventfs_it {
namespace {

// mount(8) and its helpers run with this PATH: root's and systemd's, which
// both hold /usr/local/sbin (mount.fuse3 finds "eventfs" in PATH).
constexpr const char* kSystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr const char* kInstallMarker = "/run/eventfs-it-install";
constexpr const char* kFstab = "/etc/fstab";

std::string dirname_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}
std::string basename_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The build directory the test binary belongs to: EVENTFS_BINARY is <builddir>/src/eventfs.
std::string build_dir() { return dirname_of(dirname_of(kBinary)); }

// Runs `argv` (looked up in `path`) with a clean environment, as mount(8) is
// run from a root shell or by systemd.
RunResult run_system(std::vector<std::string> argv, std::chrono::milliseconds timeout = 20s,
                     const std::string& path = kSystemPath) {
  argv.insert(argv.begin(), {"/usr/bin/env", "-i", "PATH=" + path, "LC_ALL=C", "HOME=/root"});
  return run(argv, timeout);
}

// The PATH this test was started with, for meson, ninja, cc and pkg-config.
std::string user_path() {
  const char* p = std::getenv("PATH");
  return std::string(p && *p ? p : kSystemPath) + ":" + kSystemPath;
}

std::string readlink_of(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n < 0 ? "" : std::string(buf, static_cast<std::size_t>(n));
}

// Live processes whose executable is called eventfs and that have an argument `arg`.
std::vector<pid_t> daemon_pids(const std::string& arg) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* de = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(de->d_name, &end, 10);
    if (!end || *end || pid <= 0) continue;
    auto argv = process_argv(static_cast<pid_t>(pid));
    if (argv.empty() || basename_of(argv[0]) != "eventfs") continue;
    if (std::find(argv.begin() + 1, argv.end(), arg) != argv.end() && process_alive(static_cast<pid_t>(pid)))
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::string instance_path(const std::string& name) { return std::string(kLiveTracefs) + "/instances/" + name; }

// ---------------------------------------------------------------------------
// The installation, shared by the suite.

struct Installation {
  std::string builddir;
  std::vector<std::string> logged;  // every path meson's install log names
  std::string eventfs;              // the installed daemon
  std::string helper;               // the installed mount.eventfs
  std::string catalog_dir;
  std::string header;
  std::string pc_file;
  bool installed = false;
};

// The destinations `meson install` will write, from meson's introspection file.
std::vector<std::string> planned_destinations(const std::string& builddir) {
  std::vector<std::string> out;
  std::string json = slurp(builddir + "/meson-info/intro-installed.json");
  static const std::regex pair_re("\"[^\"]*\"\\s*:\\s*\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), pair_re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// Whose is the marker of an installation by these tests? "" if there is none
// or its run is over; a description of the live run otherwise.
std::string live_marker_owner() {
  std::string text;
  if (read_file(kInstallMarker, text) != 0) return "";
  std::istringstream in(text);
  long pid = 0;
  std::string start, dir;
  in >> pid >> start >> dir;
  if (pid > 0 && pid != ::getpid() && process_alive(static_cast<pid_t>(pid)) &&
      process_start_time(static_cast<pid_t>(pid)) == start)
    return "process " + std::to_string(pid) + " (build " + dir + ")";
  return "";
}

// The build directory the marker names, or "".
std::string marker_build_dir() {
  std::string text;
  if (read_file(kInstallMarker, text) != 0) return "";
  std::istringstream in(text);
  long pid = 0;
  std::string start, dir;
  in >> pid >> start >> dir;
  return dir;
}

// Users and groups a crashed run left (eventfs-it-u<pid>, eventfs-it-g<pid>).
void remove_stale_accounts() {
  auto stale_names = [](const std::string& file, const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& line : split_lines(slurp(file))) {
      std::string name = line.substr(0, line.find(':'));
      if (name.rfind(prefix, 0) != 0) continue;
      long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid <= 0 || (pid != ::getpid() && !process_alive(static_cast<pid_t>(pid)))) out.push_back(name);
    }
    return out;
  };
  for (const auto& u : stale_names("/etc/passwd", "eventfs-it-u")) run_system({"userdel", u});
  for (const auto& g : stale_names("/etc/group", "eventfs-it-g")) run_system({"groupdel", g});
}

// Lines of /etc/fstab naming a mount point under these tests' temporary
// directories whose run is over.
void remove_stale_fstab_lines() {
  std::string text;
  if (read_file(kFstab, text) != 0) return;
  std::string kept;
  bool changed = false;
  for (const auto& line : split_lines(text)) {
    std::istringstream f(line);
    std::string spec, file;
    f >> spec >> file;
    std::string dir = temp_dir_of(file);
    if (!dir.empty() && (temp_dir_is_stale(dir) || !exists(dir))) {
      changed = true;
      continue;
    }
    kept += line + "\n";
  }
  if (changed) write_text_file(kFstab, kept);
}

class InstallTest : public ::testing::Test {
 protected:
  static Installation inst_;
  static std::string skip_;   // why the suite is skipped
  static std::string error_;  // why the installation failed

  static void SetUpTestSuite() {
    skip_ = live_skip_reason();
    if (!skip_.empty()) return;
    for (const char* tool : {"/usr/bin/mount", "/usr/bin/umount", "/sbin/mount.fuse3", "/usr/bin/env"})
      if (::access(tool, X_OK) != 0) {
        skip_ = std::string("no ") + tool;
        return;
      }
    inst_.builddir = build_dir();
    if (!exists(inst_.builddir + "/meson-info/intro-installed.json")) {
      skip_ = "not a meson build directory: " + inst_.builddir;
      return;
    }
    if (std::string owner = live_marker_owner(); !owner.empty()) {
      skip_ = "another test run (" + owner + ") has eventfs installed";
      return;
    }
    // A run that crashed left its installation: take it away with its own
    // install log first (a fresh install would not log the directories it
    // made, and so would leave them behind when uninstalled).
    const bool crashed = exists(kInstallMarker);  // its owner is gone (checked above)
    if (crashed) {
      std::string crashed_build = marker_build_dir();
      if (!crashed_build.empty() && exists(crashed_build + "/meson-logs/install-log.txt"))
        run_system({"ninja", "-C", crashed_build, "uninstall"}, 120s, user_path());
      ::unlink(kInstallMarker);
    }
    // Never overwrite an installation these tests did not make.
    if (!crashed) {
      for (const auto& dest : planned_destinations(inst_.builddir))
        if (exists(dest)) {
          skip_ = "eventfs is already installed on this system (" + dest +
                  " exists): not overwriting it; uninstall it to run these tests";
          return;
        }
    }
    remove_stale_accounts();
    remove_stale_fstab_lines();

    write_text_file(kInstallMarker, std::to_string(::getpid()) + " " + process_start_time(::getpid()) + " " +
                                        inst_.builddir + "\n");
    auto r = run_system({"meson", "install", "-C", inst_.builddir, "--no-rebuild"}, 180s, user_path());
    inst_.installed = true;  // even a failed install may have written files
    for (const auto& line : split_lines(slurp(inst_.builddir + "/meson-logs/install-log.txt"))) {
      if (line.empty() || line[0] == '#') continue;
      inst_.logged.push_back(line);
      struct stat st;
      bool file = ::stat(line.c_str(), &st) == 0 && S_ISREG(st.st_mode);
      if (!file) continue;
      std::string base = basename_of(line);
      if (base == "eventfs" && (st.st_mode & S_IXUSR)) inst_.eventfs = line;
      if (base == "mount.eventfs") inst_.helper = line;
      if (ends_with(line, "/eventfs/catalog/default.catalog")) inst_.catalog_dir = dirname_of(line);
      if (ends_with(line, "/eventfs/record.h")) inst_.header = line;
      if (base == "eventfs.pc") inst_.pc_file = line;
    }
    if (!r.exited() || r.exit_code() != 0)
      error_ = "meson install failed: " + r.describe();
    else if (inst_.eventfs.empty() || inst_.helper.empty() || inst_.catalog_dir.empty() || inst_.header.empty() ||
        inst_.pc_file.empty())
      error_ = "the install log misses a file (daemon, mount.eventfs, catalog, header or eventfs.pc):\n" +
               join(inst_.logged);
  }

  static void TearDownTestSuite() {
    if (!inst_.installed) return;
    auto r = run_system({"ninja", "-C", inst_.builddir, "uninstall"}, 120s, user_path());
    EXPECT_TRUE(r.exited() && r.exit_code() == 0) << "ninja uninstall: " << r.describe();
    std::vector<std::string> left;
    for (const auto& p : inst_.logged)
      if (exists(p)) left.push_back(p);
    EXPECT_TRUE(left.empty()) << "still installed after `ninja -C " << inst_.builddir << " uninstall`:\n"
                              << join(left);
    // Whatever uninstall left, the system gets back (files first, then the
    // directories meson made, deepest first as the log lists them).
    for (const auto& p : left)
      if (::unlink(p.c_str()) != 0) ::rmdir(p.c_str());
    ::unlink(kInstallMarker);
    inst_ = Installation{};
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(error_.empty()) << error_;
  }
};

Installation InstallTest::inst_;
std::string InstallTest::skip_;
std::string InstallTest::error_;

// ---------------------------------------------------------------------------
// One mount point, its instance name, and a guaranteed clean-up.

class SystemMount {
 public:
  SystemMount() {
    if (!dir_.ok()) return;
    mnt_ = dir_ / "mnt";
    ::mkdir(mnt_.c_str(), 0755);
    instance_ = "eventfs-it-" + dir_.path().substr(std::string(kTempPrefix).size());
  }
  ~SystemMount() { TakeDown(); }
  SystemMount(const SystemMount&) = delete;
  SystemMount& operator=(const SystemMount&) = delete;

  const std::string& path() const { return mnt_; }
  const std::string& instance() const { return instance_; }
  const TempDir& dir() const { return dir_; }

  // Unmounts if needed; the daemon then ends and removes its instance (it is
  // killed, and the instance removed, if it does not).
  void TakeDown() {
    if (mnt_.empty()) return;
    force_unmount(mnt_);
    if (!wait_until([&] { return daemon_pids(mnt_).empty(); }, 3s)) {
      for (pid_t pid : daemon_pids(mnt_)) ::kill(pid, SIGKILL);
      wait_until([&] { return daemon_pids(mnt_).empty(); }, 2s);
    }
    if (exists(instance_path(instance_))) remove_stale_instance(instance_path(instance_), instance_);
  }

 private:
  TempDir dir_;
  std::string mnt_;
  std::string instance_;
};

// Appends lines to /etc/fstab and removes exactly those lines again.
class FstabLines {
 public:
  explicit FstabLines(std::vector<std::string> lines) : lines_(std::move(lines)) {
    if (read_file(kFstab, original_) != 0) return;
    std::string text = original_;
    if (!text.empty() && text.back() != '\n') text += "\n";
    for (const auto& l : lines_) text += l + "\n";
    ok_ = write_text_file(kFstab, text);
  }
  ~FstabLines() { Restore(); }
  FstabLines(const FstabLines&) = delete;
  FstabLines& operator=(const FstabLines&) = delete;

  bool ok() const { return ok_; }

  // Back to the text before (keeping any line someone else added meanwhile).
  ::testing::AssertionResult Restore() {
    if (restored_) return ::testing::AssertionSuccess();
    restored_ = true;
    std::string now;
    if (read_file(kFstab, now) != 0) return ::testing::AssertionFailure() << "cannot read " << kFstab;
    std::string text;
    std::set<std::string> ours(lines_.begin(), lines_.end());
    for (const auto& line : split_lines(now))
      if (!ours.count(line)) text += line + "\n";
    if (text == original_ + (original_.empty() || original_.back() == '\n' ? "" : "\n")) text = original_;
    if (!write_text_file(kFstab, text)) return ::testing::AssertionFailure() << "cannot write " << kFstab;
    if (slurp(kFstab) != original_)
      return ::testing::AssertionFailure() << kFstab << " differs from before the test:\n" << slurp(kFstab);
    return ::testing::AssertionSuccess();
  }

 private:
  std::vector<std::string> lines_;
  std::string original_;
  bool ok_ = false;
  bool restored_ = false;
};

// `mount` has just run: the mount is up, made by the installed daemon, serves
// the golden format and has its instance; then `umount` takes all of it down.
void ExpectMountedThenUnmount(const Installation& inst, const SystemMount& m, const RunResult& mounted,
                              const std::string& option_expected = "") {
  ASSERT_TRUE(mounted.exited() && mounted.exit_code() == 0) << "mount: " << mounted.describe();
  auto e = mount_at(m.path());
  ASSERT_TRUE(e.has_value()) << "mount returned 0 but nothing is mounted at " << m.path();
  EXPECT_EQ(e->fstype, "fuse.eventfs");
  EXPECT_EQ(e->source, "eventfs");
  if (!option_expected.empty()) {
    EXPECT_TRUE(contains("," + e->options + ",", "," + option_expected + ","))
        << "super options " << e->options << " lack " << option_expected;
  }
  EXPECT_EQ(slurp(m.path() + "/sched_switch/format"), kGoldenSchedSwitch);
  EXPECT_TRUE(exists(instance_path(m.instance()))) << "no tracefs instance " << m.instance();
  auto pids = daemon_pids(m.path());
  EXPECT_EQ(pids.size(), 1u) << "eventfs daemons serving " << m.path();
  for (pid_t pid : pids) {
    EXPECT_EQ(readlink_of("/proc/" + std::to_string(pid) + "/exe"), inst.eventfs)
        << "the daemon is not the installed eventfs";
  }

  auto r = run_system({"umount", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << "umount: " << r.describe();
  EXPECT_FALSE(mounted_at(m.path())) << "still mounted after umount";
  EXPECT_TRUE(wait_until([&] { return daemon_pids(m.path()).empty(); }, 5s)) << "the daemon did not exit";
  EXPECT_TRUE(wait_until([&] { return !exists(instance_path(m.instance())); }, 5s))
      << "tracefs instance " << m.instance() << " left after umount";
}

// ---------------------------------------------------------------------------
// What is installed where.

TEST_F(InstallTest, FilesLandWhereTheSystemLooks) {
  // mount(8) (libmount) runs /sbin/mount.TYPE; the helper runs the daemon it
  // was installed with.
  auto real = [](const std::string& p) {
    char* r = ::realpath(p.c_str(), nullptr);
    std::string out = r ? r : p;
    std::free(r);
    return out;
  };
  EXPECT_EQ(real(dirname_of(inst_.helper)), real("/sbin"))
      << inst_.helper << " is not where mount(8) looks (-Dmount_helper_dir changed?)";
  EXPECT_EQ(basename_of(inst_.helper), "mount.eventfs");
  struct stat st;
  ASSERT_EQ(::stat(inst_.helper.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_TRUE(contains(slurp(inst_.helper), "'" + inst_.eventfs + "'")) << "the daemon's path is not filled in";
  EXPECT_FALSE(contains(slurp(inst_.helper), "@EVENTFS@"));
  // man finds the pages, and the examples are there.
  for (const auto& page : {"eventfs.8", "eventfs.5", "eventfs-format.5", "eventfs-catalog.5", "mount.eventfs.8",
                            "eventfs-record.1", "eventfs-convert.1"}) {
    bool logged = false;
    for (const auto& p : inst_.logged) logged = logged || ends_with(p, std::string("/") + page);
    EXPECT_TRUE(logged) << page << " not installed";
  }
  auto r = run_system({"man", "-w", "8", "mount.eventfs"});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  // The recorder is a user command: in bindir, beside the daemon's sbindir.
  std::string recorder;
  for (const auto& p : inst_.logged)
    if (ends_with(p, "/bin/eventfs-record")) recorder = p;
  ASSERT_NE(recorder, "") << "eventfs-record not installed:\n" << join(inst_.logged);
  r = run({recorder, "-h"});
  EXPECT_EQ(r.exit_code(), 0) << r.describe();
  // Both programs say the version the build was made as.
  auto daemon_version = run({inst_.eventfs, "-V"}), recorder_version = run({recorder, "-V"});
  EXPECT_EQ(daemon_version.exit_code(), 0) << daemon_version.describe();
  EXPECT_EQ(recorder_version.exit_code(), 0) << recorder_version.describe();
  EXPECT_EQ(recorder_version.out, "eventfs-record " EVENTFS_VERSION "\n");
  std::string converter;
  for (const auto& p : inst_.logged)
    if (ends_with(p, "/bin/eventfs-convert")) converter = p;
  ASSERT_NE(converter, "") << "eventfs-convert not installed:\n" << join(inst_.logged);
  auto convert_version = run({converter, "-V"});
  EXPECT_EQ(convert_version.out, "eventfs-convert " EVENTFS_VERSION "\n") << convert_version.describe();
  EXPECT_EQ(daemon_version.out.rfind("eventfs " EVENTFS_VERSION " ", 0), 0u) << daemon_version.out;
  bool examples = false;
  for (const auto& p : inst_.logged) examples = examples || ends_with(p, "/examples/mnt-events.mount");
  EXPECT_TRUE(examples) << "examples not installed:\n" << join(inst_.logged);
  for (const auto& p : inst_.logged) {
    if (ends_with(p, "/examples/fstab.example")) {
      EXPECT_TRUE(contains(slurp(p), "\neventfs /mnt/events fuse.eventfs "
                                     "defaults,allow_other,x-systemd.requires=sys-kernel-tracing.mount 0 0\n"));
    }
  }
}

// ---------------------------------------------------------------------------
// The four mount(8) forms and fstab.

TEST_F(InstallTest, MountTypeFuseWithTypeAsSource) {
  SystemMount m;
  ExpectMountedThenUnmount(inst_, m,
                           run_system({"mount", "-t", "fuse", "-o", "instance=" + m.instance(), "eventfs", m.path()}));
}

TEST_F(InstallTest, MountTypeFuseWithTypeHashSource) {
  SystemMount m;
  ExpectMountedThenUnmount(
      inst_, m, run_system({"mount", "-t", "fuse", "-o", "instance=" + m.instance(), "eventfs#eventfs", m.path()}));
}

TEST_F(InstallTest, MountTypeFuseDotEventfs) {
  SystemMount m;
  ExpectMountedThenUnmount(
      inst_, m, run_system({"mount", "-t", "fuse.eventfs", "-o", "instance=" + m.instance(), "eventfs", m.path()}));
}

TEST_F(InstallTest, MountTypeEventfsUsesTheHelper) {
  SystemMount m;
  ExpectMountedThenUnmount(
      inst_, m, run_system({"mount", "-t", "eventfs", "-o", "instance=" + m.instance(), "eventfs", m.path()}));
}

TEST_F(InstallTest, FstabLineMountsAndUnmountsByMountPoint) {
  SystemMount m;
  FstabLines fstab({"eventfs " + m.path() + " fuse.eventfs defaults,allow_other,instance=" + m.instance() + " 0 0"});
  ASSERT_TRUE(fstab.ok()) << "cannot add a line to " << kFstab;
  ExpectMountedThenUnmount(inst_, m, run_system({"mount", m.path()}), "allow_other");
  EXPECT_TRUE(fstab.Restore());
}

// An fstab line of type eventfs with the options that are for mount(8),
// fstab and systemd only: the helper drops what mount(8) passes on.
TEST_F(InstallTest, FstabLineOfTypeEventfsWithMountOnlyOptions) {
  SystemMount m;
  FstabLines fstab({"eventfs " + m.path() +
                    " eventfs defaults,noauto,nofail,_netdev,x-systemd.requires=sys-kernel-tracing.mount,"
                    "comment=eventfs-it,instance=" +
                    m.instance() + " 0 0"});
  ASSERT_TRUE(fstab.ok()) << "cannot add a line to " << kFstab;
  ExpectMountedThenUnmount(inst_, m, run_system({"mount", m.path()}));
  EXPECT_TRUE(fstab.Restore());
}

// ---------------------------------------------------------------------------
// The helper's conventions.

TEST_F(InstallTest, FakeMountMountsNothing) {
  SystemMount m;
  auto r = run_system({"mount", "-f", "-t", "eventfs", "-o", "instance=" + m.instance(), "eventfs", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_TRUE(daemon_pids(m.path()).empty()) << "a daemon was started";
  EXPECT_FALSE(exists(instance_path(m.instance()))) << "a tracefs instance was made";
}

TEST_F(InstallTest, FailingDaemonFailsTheMountWithItsMessage) {
  SystemMount m;
  auto r = run_system(
      {"mount", "-t", "eventfs", "-o", "catalog=/nonexistent,instance=" + m.instance(), "eventfs", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() != 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "/nonexistent")) << "the daemon's message is missing: " << r.describe();
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_FALSE(exists(instance_path(m.instance())));

  // An option neither eventfs nor libfuse knows fails the same way.
  r = run_system({"mount", "-t", "eventfs", "-o", "no_such_option,instance=" + m.instance(), "eventfs", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() != 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "no_such_option")) << r.describe();
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_FALSE(exists(instance_path(m.instance())));
}

TEST_F(InstallTest, MountOnlyOptionsAreIgnored) {
  SystemMount m;
  ExpectMountedThenUnmount(inst_, m,
                           run_system({"mount", "-t", "eventfs", "-o",
                                       "noauto,nofail,_netdev,user,instance=" + m.instance(), "eventfs", m.path()}));
}

// What the helper runs, exactly: mount(8) already drops some options itself,
// so the helper is called directly here, faked and verbose.
TEST_F(InstallTest, HelperFiltersOptionsAndFlags) {
  SystemMount m;
  auto r = run_system({inst_.helper, "eventfs", m.path(), "-s", "-n", "-f", "-v", "-o",
                       "rw,defaults,auto,noauto,nofail,_netdev,user,nouser,users,comment=fstab-note,"
                       "x-systemd.requires=sys-kernel-tracing.mount,x-mount.mkdir,allow_other,instance=" +
                           m.instance(),
                       "-o", "ro"});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_EQ(r.err, "mount.eventfs: would run: " + inst_.eventfs + " eventfs " + m.path() +
                       " -o rw,allow_other,instance=" + m.instance() + ",ro\n");
  EXPECT_FALSE(mounted_at(m.path()));

  // No SOURCE (mount.fuse's "type#" form leaves it empty): eventfs.
  r = run_system({inst_.helper, "", m.path(), "-fv"});
  EXPECT_EQ(r.err, "mount.eventfs: would run: " + inst_.eventfs + " eventfs " + m.path() + "\n") << r.describe();

  // Wrong use, and mount.fuse3's options eventfs cannot honour.
  for (const auto& args : std::vector<std::vector<std::string>>{{"eventfs"},
                                                                {"eventfs", m.path(), "-x"},
                                                                {"eventfs", m.path(), "extra"},
                                                                {"eventfs", m.path(), "-o", "setuid=nobody"},
                                                                {"eventfs", m.path(), "-o", "drop_privileges"}}) {
    std::vector<std::string> argv = {inst_.helper};
    argv.insert(argv.end(), args.begin(), args.end());
    r = run_system(argv);
    EXPECT_TRUE(r.exited() && r.exit_code() == 1) << join(argv, " ") << ": " << r.describe();
    EXPECT_FALSE(r.err.empty()) << join(argv, " ") << ": no message";
  }
  EXPECT_FALSE(mounted_at(m.path()));
}

// ---------------------------------------------------------------------------
// The installed daemon reads the installed catalog.

TEST_F(InstallTest, InstalledDaemonUsesTheInstalledCatalog) {
  // (detect_leaks=0: under LeakSanitizer, eventfs -h reports the fuse_args
  // main() does not free, exits 1 and loses its buffered stdout.)
  auto r = run({"/usr/bin/env", "-i", "ASAN_OPTIONS=detect_leaks=0", inst_.eventfs, "-h"});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_TRUE(contains(r.out, inst_.catalog_dir)) << "eventfs -h does not name " << inst_.catalog_dir << ":\n"
                                                  << r.out;

  // Proof that the default is that directory: a catalog file with an error
  // put there (in a private mount namespace, over a copy of the directory, so
  // no other eventfs sees it) stops the installed daemon with its name.
  SystemMount m;
  const std::string overlay = m.dir() / "catalog";
  ASSERT_EQ(::mkdir(overlay.c_str(), 0755), 0);
  ASSERT_TRUE(write_text_file(overlay + "/default.catalog", slurp(inst_.catalog_dir + "/default.catalog")));
  ASSERT_TRUE(write_text_file(overlay + "/zz-eventfs-it.catalog", "this is not a catalog\n"));
  r = run_system({"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                  "mount --bind \"$1\" \"$2\" && exec \"$3\" eventfs \"$4\" -f -o instance=\"$5\"", "sh", overlay,
                  inst_.catalog_dir, inst_.eventfs, m.path(), m.instance()});
  EXPECT_TRUE(r.exited() && r.exit_code() == 1) << r.describe();
  EXPECT_TRUE(contains(r.err, inst_.catalog_dir + "/zz-eventfs-it.catalog:1:")) << r.describe();
  EXPECT_FALSE(mounted_at(m.path()));
}

// ---------------------------------------------------------------------------
// Readers that are not root: gid= and allow_other.

// A user and group made for one test, removed again whatever happens.
class TestAccount {
 public:
  TestAccount() {
    group_ = "eventfs-it-g" + std::to_string(::getpid());
    user_ = "eventfs-it-u" + std::to_string(::getpid());
    auto g = run_system({"groupadd", group_});
    if (!g.exited() || g.exit_code() != 0) {
      error_ = "groupadd: " + g.describe();
      return;
    }
    made_group_ = true;
    auto u = run_system({"useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                         "--gid", group_, user_});
    if (!u.exited() || u.exit_code() != 0) {
      error_ = "useradd: " + u.describe();
      return;
    }
    made_user_ = true;
    const passwd* pw = ::getpwnam(user_.c_str());
    const group* gr = ::getgrnam(group_.c_str());
    if (!pw || !gr) {
      error_ = "the new user or group cannot be looked up";
      return;
    }
    uid_ = pw->pw_uid;
    gid_ = gr->gr_gid;
  }
  ~TestAccount() {
    if (made_user_) run_system({"userdel", user_});
    if (made_group_) run_system({"groupdel", group_});
  }
  TestAccount(const TestAccount&) = delete;
  TestAccount& operator=(const TestAccount&) = delete;

  const std::string& error() const { return error_; }
  const std::string& user() const { return user_; }
  const std::string& group_name() const { return group_; }

  // Runs `fn` in a child that is this user (its group only) and returns what
  // it returns (an errno, or 0); -1 if the child could not become the user.
  int As(const std::function<int()>& fn) const {
    pid_t pid = ::fork();
    if (pid == 0) {
      gid_t groups[1] = {gid_};
      if (::setgroups(1, groups) != 0 || ::setresgid(gid_, gid_, gid_) != 0 || ::setresuid(uid_, uid_, uid_) != 0)
        ::_exit(255);
      ::_exit(fn() & 0xff);
    }
    if (pid < 0) return -1;
    int st = 0;
    if (!wait_exit(pid, 10s, st)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 255) return -1;
    return WEXITSTATUS(st);
  }

 private:
  std::string user_, group_, error_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool made_user_ = false, made_group_ = false;
};

// In the child: open `path` with `flags`, and for reads read once. 0 if
// permitted (EAGAIN from a non-blocking stream counts), else the errno.
int try_open(const char* path, int flags) {
  int fd = ::open(path, flags | O_CLOEXEC);
  if (fd < 0) return errno;
  int rc = 0;
  if ((flags & O_ACCMODE) == O_RDONLY) {
    char buf[8192];
    if (::read(fd, buf, sizeof buf) < 0 && errno != EAGAIN) rc = errno;
  }
  ::close(fd);
  return rc;
}

TEST_F(InstallTest, GroupMembersReadButDoNotControl) {
  TestAccount acct;
  ASSERT_TRUE(acct.error().empty()) << acct.error();
  SystemMount m;
  auto r = run_system({"mount", "-t", "eventfs", "-o",
                       "allow_other,gid=" + acct.group_name() + ",instance=" + m.instance(), "eventfs", m.path()});
  ASSERT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  ASSERT_TRUE(mounted_at(m.path()));

  // A shell user's view: cat, as the user.
  auto cat = run_system({"setpriv", "--reuid=" + acct.user(), "--regid=" + acct.group_name(), "--init-groups", "cat",
                         m.path() + "/sched_switch/format"});
  EXPECT_TRUE(cat.exited() && cat.exit_code() == 0) << cat.describe();
  EXPECT_EQ(cat.out, kGoldenSchedSwitch);

  const std::string format = m.path() + "/sched_switch/format", pipe = m.path() + "/trace_pipe",
                    raw = m.path() + "/per_cpu/cpu0/trace_pipe_raw", enable = m.path() + "/sched_switch/enable",
                    trigger = m.path() + "/sched_switch/trigger", filter = m.path() + "/sched_switch/filter";
  EXPECT_EQ(acct.As([&] { return try_open(format.c_str(), O_RDONLY); }), 0) << "reading format";
  EXPECT_EQ(acct.As([&] { return try_open(pipe.c_str(), O_RDONLY | O_NONBLOCK); }), 0) << "reading trace_pipe";
  if (exists(raw)) {
    EXPECT_EQ(acct.As([&] { return try_open(raw.c_str(), O_RDONLY | O_NONBLOCK); }), 0) << "reading trace_pipe_raw";
  }
  EXPECT_EQ(acct.As([&] { return try_open(enable.c_str(), O_WRONLY); }), EACCES) << "writing enable";
  EXPECT_EQ(acct.As([&] { return try_open(trigger.c_str(), O_WRONLY); }), EACCES) << "writing trigger";
  EXPECT_EQ(acct.As([&] { return try_open(filter.c_str(), O_WRONLY); }), EACCES) << "writing filter";
  EXPECT_EQ(slurp(enable), "0\n") << "a refused write changed enable";

  struct stat st;
  ASSERT_EQ(::stat(format.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, static_cast<gid_t>(::getgrnam(acct.group_name().c_str())->gr_gid));
  EXPECT_EQ(st.st_mode & 07777, 0440u);
  ASSERT_EQ(::stat(enable.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);

  r = run_system({"umount", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_TRUE(wait_until([&] { return !exists(instance_path(m.instance())); }, 5s));
}

TEST_F(InstallTest, WithoutAllowOtherOthersCannotEvenStat) {
  TestAccount acct;
  ASSERT_TRUE(acct.error().empty()) << acct.error();
  SystemMount m;
  auto r = run_system(
      {"mount", "-t", "eventfs", "-o", "gid=" + acct.group_name() + ",instance=" + m.instance(), "eventfs", m.path()});
  ASSERT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  ASSERT_TRUE(mounted_at(m.path()));

  const std::string root = m.path(), format = m.path() + "/sched_switch/format";
  auto stat_errno = [](const char* p) {
    struct stat st;
    return ::stat(p, &st) == 0 ? 0 : errno;
  };
  EXPECT_EQ(acct.As([&] { return stat_errno(root.c_str()); }), EACCES) << "stat of the mount point";
  EXPECT_EQ(acct.As([&] { return try_open(root.c_str(), O_RDONLY | O_DIRECTORY); }), EACCES) << "listing it";
  EXPECT_EQ(acct.As([&] { return try_open(format.c_str(), O_RDONLY); }), EACCES) << "reading a format";
  auto ls = run_system({"setpriv", "--reuid=" + acct.user(), "--regid=" + acct.group_name(), "--init-groups", "ls",
                        m.path()});
  EXPECT_NE(ls.exit_code(), 0) << ls.describe();
  EXPECT_TRUE(contains(ls.err, "Permission denied")) << ls.describe();

  r = run_system({"umount", m.path()});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_TRUE(wait_until([&] { return !exists(instance_path(m.instance())); }, 5s));
}

// ---------------------------------------------------------------------------
// Tool authors: pkg-config and the installed header.

TEST_F(InstallTest, PkgConfigFindsTheInstalledHeader) {
  const std::string env_path = user_path();
  auto r = run_system({"pkg-config", "--cflags", "eventfs"}, 20s, env_path);
  ASSERT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  const std::string include_dir = dirname_of(dirname_of(inst_.header));
  std::string cflags = r.out;
  while (!cflags.empty() && std::isspace(static_cast<unsigned char>(cflags.back()))) cflags.pop_back();
  EXPECT_EQ(cflags, "-I" + include_dir);
  r = run_system({"pkg-config", "--modversion", "eventfs"}, 20s, env_path);
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_FALSE(r.out.empty());

  TempDir tmp;
  ASSERT_TRUE(tmp.ok());
  ASSERT_TRUE(write_text_file(tmp / "use_record.c",
                              "#include <eventfs/record.h>\n"
                              "#include <stdio.h>\n"
                              "#include <string.h>\n"
                              "int main(void) {\n"
                              "  _Alignas(8) char buf[64];\n"
                              "  struct eventfs_record_header h;\n"
                              "  struct eventfs_lost l;\n"
                              "  memset(buf, 0, sizeof buf);\n"
                              "  h.size = EVENTFS_RECORD_SIZE(sizeof l);\n"
                              "  h.id = EVENTFS_ID_LOST;\n"
                              "  h.timestamp = 1;\n"
                              "  h.pid = 0; h.version = EVENTFS_RECORD_VERSION; h.reserved = 0;\n"
                              "  memcpy(buf, &h, sizeof h);\n"
                              "  l.count = 3; l.cpu = 0; l.flags = EVENTFS_LOST_COUNT_UNKNOWN;\n"
                              "  memcpy(buf + sizeof h, &l, sizeof l);\n"
                              "  if (sizeof h != 24 || h.size % EVENTFS_RECORD_ALIGN) return 1;\n"
                              "  if (eventfs_record_check((const struct eventfs_record_header *)buf, sizeof buf)\n"
                              "      != h.size) return 2;\n"
                              "  printf(\"%u\\n\", (unsigned)h.size);\n"
                              "  return 0;\n"
                              "}\n"));
  // Only what pkg-config says, never the source tree's include/.
  auto compile = [&](const std::string& flags, const std::string& src, const std::string& out) {
    return run_system({"/bin/sh", "-c", "cc $(pkg-config --cflags eventfs) " + flags + " -o \"$2\" \"$1\"", "sh",
                       src, out},
                      60s, env_path);
  };
  r = compile("-std=c11 -Wall -Wextra -Werror -pedantic -MD", tmp / "use_record.c", tmp / "use_record");
  ASSERT_TRUE(r.exited() && r.exit_code() == 0) << "compiling against the installed header: " << r.describe();
  std::string deps = slurp(tmp / "use_record.d");
  EXPECT_TRUE(contains(deps, inst_.header)) << "not compiled against " << inst_.header << ":\n" << deps;
  r = run({tmp / "use_record"});
  EXPECT_TRUE(r.exited() && r.exit_code() == 0) << r.describe();
  EXPECT_EQ(r.out, "40\n");

  // The examples shipped for tool authors build the same way.
  for (const auto& name : list_dir(std::string(kSourceDir) + "/examples")) {
    if (!ends_with(name, ".c")) continue;
    const std::string out = tmp / ("example-" + name.substr(0, name.size() - 2));
    r = compile("-MD", std::string(kSourceDir) + "/examples/" + name, out);
    EXPECT_TRUE(r.exited() && r.exit_code() == 0) << "examples/" << name << ": " << r.describe();
    std::string example_deps = slurp(out + ".d");
    if (contains(example_deps, "eventfs/record.h")) {
      EXPECT_TRUE(contains(example_deps, inst_.header)) << "examples/" << name << " not compiled against "
                                                        << inst_.header << ":\n" << example_deps;
    }
  }
}

}  // namespace
}  // namespace eventfs_it
