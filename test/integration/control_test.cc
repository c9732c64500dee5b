// The control files on the real kernel: enable, filter, trigger and error_log
// written through a mount and checked against what lands in the daemon's own
// tracefs instance; the instance's life (made at mount, removed at unmount or
// on SIGTERM/SIGINT, reclaimed after SIGKILL, a foreign one left alone);
// every refused write of the shared table; triggers that really fire; and
// many threads at once. Nothing here may touch the top-level instance.
#include <fnmatch.h>

#include <functional>
#include <random>
#include <string_view>

#include "../common/refused_writes.h"
#include "mounted_eventfs.h"

namespace eventfs_it {
namespace {

using RefusedWrite = ::eventfs::testing::RefusedWrite;

constexpr const char* kTopSchedSwitch = "/sys/kernel/tracing/events/sched/sched_switch";
constexpr const char* kHeaderStart = "# Available triggers:\n";

// A second stable event over sched:sched_switch with renamed fields, as in
// the unit tests (controller_test.cc).
constexpr const char* kTaskSwitchCatalog =
    "\nSTABLE_EVENT(task_switch, sched:sched_switch, id=900,\n"
    "\t__field(pid_t, from) = prev_pid\n"
    "\t__field(pid_t, to) = next_pid\n"
    "\t__field(char, state) = task_state(prev_state)\n"
    ")\n";

std::string instance_dir(const std::string& name) { return std::string(kLiveTracefs) + "/instances/" + name; }
std::string owner_record(const std::string& name) { return "/run/eventfs/" + name + ".owner"; }

// Waits (bounded) for the ownership record of `name` to name `pid`; returns its text.
std::string wait_owner(const std::string& name, pid_t pid, std::chrono::milliseconds limit = 2s) {
  auto deadline = Clock::now() + limit;
  std::string text;
  for (;;) {
    if (read_file(owner_record(name), text) == 0 && std::strtol(text.c_str(), nullptr, 10) == pid) return text;
    if (Clock::now() >= deadline) return text;
    std::this_thread::sleep_for(2ms);
  }
}

// One open and one write(2) of exactly `data`, the way `echo data > path`
// does it (`flags` O_APPEND for >>). 0, the errno, or -1 for a short write.
int write_once(const std::string& path, std::string_view data, int flags = O_WRONLY | O_TRUNC) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = n < 0 ? errno : (static_cast<std::size_t>(n) == data.size() ? 0 : -1);
  ::close(fd);
  return e;
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f)
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else
      out += static_cast<char>(c);
  }
  return out.size() > 200 ? out.substr(0, 200) + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

// A write through the mount that must be accepted.
::testing::AssertionResult Accepts(const MountedEventfs& m, const std::string& rel, std::string_view data) {
  int e = write_once(m / rel, data);
  if (e == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "write of '" << printable(data) << "' to " << rel << " failed: "
                                       << (e < 0 ? "short write" : std::strerror(e))
                                       << "; error_log: " << slurp(m / "error_log");
}

// Trigger lines of a trigger file (the kernel's "# ..." header is not one).
std::vector<std::string> trigger_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : split_lines(text))
    if (!l.empty() && l[0] != '#') out.push_back(l);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// Events of a live tracefs system whose names match a glob, sorted.
std::vector<std::string> events_matching(const std::string& system, const std::string& glob) {
  std::vector<std::string> out;
  for (const auto& ev : list_dir(std::string(kLiveTracefs) + "/events/" + system, true))
    if (::fnmatch(glob.c_str(), ev.c_str(), 0) == 0) out.push_back(ev);
  return out;
}

// The default catalog plus task_switch, in a file of `dir`.
std::string write_task_switch_catalog(const TempDir& dir) {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string path = dir / "with-task-switch.catalog";
  EXPECT_TRUE(write_text_file(path, text + kTaskSwitchCatalog));
  return path;
}

// Stable event -> "system/event" of its raw event on this kernel.
std::map<std::string, std::string> live_sources() {
  std::map<std::string, std::string> out;
  for (const auto& e : default_catalog())
    for (const auto& src : e.sources)
      if (exists(std::string(kLiveTracefs) + "/events/" + src + "/format")) {
        out[e.name] = src;
        break;
      }
  return out;
}

// What a stable trigger file must show for the kernel's `text` (default
// catalog: filter fields keep their names; enable_event/disable_event targets
// that are stable events get their stable names).
std::string translate_kernel_triggers(const std::string& text, const std::map<std::string, std::string>& sources) {
  if (text.rfind("#", 0) == 0) return text;
  std::map<std::string, std::string> stable_of;  // "sys:raw" -> stable
  for (const auto& [stable, src] : sources) {
    std::string k = src.substr(0, src.find('/')) + ":" + src.substr(src.find('/') + 1);
    stable_of.emplace(k, stable);
  }
  std::string out;
  for (const auto& line : trigger_lines(text)) {
    std::string l = line;
    for (const char* cmd : {"enable_event:", "disable_event:"}) {
      if (l.rfind(cmd, 0) != 0) continue;
      std::size_t a = std::strlen(cmd);
      std::size_t c1 = l.find(':', a);
      std::size_t c2 = c1 == std::string::npos ? c1 : l.find(':', c1 + 1);
      if (c2 == std::string::npos) break;
      auto it = stable_of.find(l.substr(a, c2 - a));
      if (it != stable_of.end()) l = cmd + it->second + l.substr(c2);
    }
    out += l + "\n";
  }
  return out;
}

// Two threads handing a byte back and forth over pipes: each hand-over is a
// context switch on a machine with few CPUs.
void ping_pong(int rounds) {
  int a[2], b[2];
  if (::pipe(a) != 0) return;
  if (::pipe(b) != 0) {
    ::close(a[0]);
    ::close(a[1]);
    return;
  }
  std::thread peer([&] {
    char c;
    for (int i = 0; i < rounds; ++i) {
      if (::read(a[0], &c, 1) != 1) break;
      if (::write(b[1], &c, 1) != 1) break;
    }
  });
  char c = 'x';
  for (int i = 0; i < rounds; ++i) {
    if (::write(a[1], &c, 1) != 1) break;
    if (::read(b[0], &c, 1) != 1) break;
  }
  peer.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
}

// Makes context switches until `done()` or the deadline.
bool switch_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5s) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    ping_pong(200);
    std::this_thread::sleep_for(10ms);
  }
}

// ---------------------------------------------------------------------------
// Every test checks that the top-level instance's sched_switch control files
// (and the other files eventfs writes in its instance) are as they were.

class ControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EVENTFS_REQUIRE_LIVE_TRACEFS();
    top_ = TopLevel();
  }
  void TearDown() override {
    if (top_.empty()) return;  // skipped
    EXPECT_EQ(TopLevel(), top_) << "the top-level instance was changed";
  }
  static std::map<std::string, std::string> TopLevel() {
    std::map<std::string, std::string> s;
    for (const char* f : {"trigger", "filter", "enable"}) s[f] = slurp(std::string(kTopSchedSwitch) + "/" + f);
    for (const char* f : {"events/sched/sched_migrate_task/enable", "events/sched/sched_wakeup/enable",
                          "events/irq/softirq_entry/enable", "events/block/block_rq_issue/enable"})
      s[f] = slurp(std::string(kLiveTracefs) + "/" + f);
    return s;
  }

 private:
  std::map<std::string, std::string> top_;
};

// ---------------------------------------------------------------------------
// 1. The instance's life.

class ControlLifecycle : public ControlTest {};

// Arms triggers (enable_event, traceoff, a raw glob), a filter and enabled
// events through the mount, and checks that they reached the instance.
void ArmEverything(const MountedEventfs& m) {
  const std::string inst = instance_dir(m.instance());
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "enable_event:sched_migrate_task if prev_pid == 1\n"));
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "traceoff:5 if prev_pid == 1\n"));
  ASSERT_TRUE(Accepts(m, "raw/sched/sched_switch/trigger", "enable_event:irq:softirq_*\n"));
  ASSERT_TRUE(Accepts(m, "sched_wakeup/trigger", "disable_event:sched_process_fork\n"));
  ASSERT_TRUE(Accepts(m, "sched_switch/filter", "prev_pid != 0\n"));
  ASSERT_TRUE(Accepts(m, "sched_switch/enable", "1\n"));
  ASSERT_TRUE(Accepts(m, "raw/sched/sched_process_free/enable", "1\n"));
  ASSERT_EQ(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")).size(),
            2 + events_matching("irq", "softirq_*").size());
  ASSERT_EQ(trigger_lines(slurp(inst + "/events/sched/sched_wakeup/trigger")).size(), 1u);
  ASSERT_EQ(slurp(inst + "/events/sched/sched_switch/enable").substr(0, 1), "1");
  ASSERT_EQ(slurp(inst + "/events/sched/sched_process_free/enable"), "1\n");
}

struct Ending {
  const char* name;
  int signal;  // 0: fusermount3 -u
  bool armed;  // triggers and enabled events set before
};

class ControlInstanceEnd : public ControlTest, public ::testing::WithParamInterface<Ending> {};

TEST_P(ControlInstanceEnd, TheInstanceIsMadeAtMountAndGoneAfterwards) {
  const Ending& how = GetParam();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  ASSERT_FALSE(m.instance().empty());
  EXPECT_TRUE(exists(inst + "/events/sched/sched_switch/trigger")) << inst;
  std::string owner = wait_owner(m.instance(), m.pid());
  EXPECT_EQ(std::strtol(owner.c_str(), nullptr, 10), m.pid()) << owner;
  if (how.armed) {
    ArmEverything(m);
    if (HasFatalFailure()) return;
  }
  std::optional<int> st;
  if (how.signal == 0) {
    auto r = run({"/usr/bin/fusermount3", "-u", m.path()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    st = m.WaitExit(10s);
  } else {
    st = m.SignalAndWait(how.signal, 10s);
  }
  ASSERT_TRUE(st.has_value()) << "the daemon did not end; stderr: " << m.Stderr();
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "status " << *st << "; stderr: " << m.Stderr();
  EXPECT_FALSE(mounted_at(m.path()));
  EXPECT_FALSE(exists(inst)) << "the daemon left its instance behind";
  EXPECT_FALSE(exists(owner_record(m.instance()))) << "the daemon left its ownership record behind";
  EXPECT_EQ(m.Stderr(), "");
}

INSTANTIATE_TEST_SUITE_P(ControlEndings, ControlInstanceEnd,
                         ::testing::Values(Ending{"Unmount", 0, false}, Ending{"UnmountArmed", 0, true},
                                           Ending{"Sigterm", SIGTERM, false}, Ending{"SigtermArmed", SIGTERM, true},
                                           Ending{"Sigint", SIGINT, false}, Ending{"SigintArmed", SIGINT, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(ControlLifecycle, AKilledDaemonsInstanceIsReclaimedCleanByTheNextDaemon) {
  MountedEventfs first;
  ASSERT_TRUE(first.Start());
  const std::string name = first.instance();
  const std::string inst = instance_dir(name);
  ArmEverything(first);
  if (HasFatalFailure()) return;
  auto st = first.SignalAndWait(SIGKILL);
  ASSERT_TRUE(st.has_value());
  ASSERT_TRUE(WIFSIGNALED(*st)) << *st;
  force_unmount(first.path());  // the dead daemon's mount
  // Killed, it could clean nothing up: the instance, its triggers and the
  // record naming a dead process are still there.
  ASSERT_TRUE(exists(inst));
  ASSERT_TRUE(exists(owner_record(name)));
  ASSERT_FALSE(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")).empty());

  MountOptions o;
  o.instance_name = name;
  o.timeout = 30s;  // reclaiming walks every event of the instance
  MountedEventfs second(o);
  ASSERT_TRUE(second.Start());
  EXPECT_EQ(second.Stderr(), "");
  std::string owner = wait_owner(name, second.pid());
  EXPECT_EQ(std::strtol(owner.c_str(), nullptr, 10), second.pid()) << owner;
  ASSERT_TRUE(exists(inst));
  // Nothing of the old daemon remains in any event of the instance.
  std::vector<std::string> leftovers;
  auto events = tracefs_events(inst);
  ASSERT_GT(events.size(), 100u);
  for (const auto& ev : events) {
    const std::string d = inst + "/events/" + ev;
    if (!exists(d + "/enable")) continue;  // ftrace/* have no controls
    std::string trig = slurp(d + "/trigger"), en = slurp(d + "/enable"), filt = slurp(d + "/filter");
    if (!trigger_lines(trig).empty()) leftovers.push_back(ev + "/trigger: " + trig);
    if (en != "0\n") leftovers.push_back(ev + "/enable: " + en);
    if (filt != "none\n") leftovers.push_back(ev + "/filter: " + filt);
  }
  EXPECT_TRUE(leftovers.empty()) << head_lines(join(leftovers));
  EXPECT_EQ(slurp(inst + "/tracing_on"), "1\n");
  // The new daemon works on it.
  EXPECT_EQ(slurp(second / "sched_switch/enable"), "0\n");
  EXPECT_EQ(slurp(second / "sched_switch/trigger"), slurp(inst + "/events/sched/sched_switch/trigger"));
  EXPECT_TRUE(Accepts(second, "sched_switch/trigger", "enable_event:sched_migrate_task if prev_pid == 1\n"));
  EXPECT_EQ(trigger_lines(slurp(inst + "/events/sched/sched_switch/trigger")),
            std::vector<std::string>{"enable_event:sched:sched_migrate_task:unlimited if prev_pid == 1"});
  auto r = run({"/usr/bin/fusermount3", "-u", second.path()});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  auto st2 = second.WaitExit(10s);
  ASSERT_TRUE(st2.has_value());
  EXPECT_TRUE(WIFEXITED(*st2) && WEXITSTATUS(*st2) == 0) << *st2;
  EXPECT_FALSE(exists(inst)) << "no instance may remain after the second daemon";
  EXPECT_FALSE(exists(owner_record(name)));
}

// Whoever looks at the ownership record (another daemon deciding whether an
// instance is in use, a clean-up script) must always find a whole one: it is
// never seen existing but empty or cut short while a daemon starts.
TEST_F(ControlLifecycle, TheOwnershipRecordIsNeverSeenHalfWritten) {
  static const std::regex whole(R"(^\d+ \d+ \d+ /\S+\n$)");  // pid, start time, instance inode, tracefs
  std::vector<std::string> torn;
  for (int round = 0; round < 5 && torn.empty(); ++round) {
    TempDir naming;  // a name of this run's own, for the stale-mount cleaner
    ASSERT_TRUE(naming.ok());
    MountOptions o;
    o.instance_name = "eventfs-it-" + naming.path().substr(std::string(kTempPrefix).size());
    const std::string record = owner_record(o.instance_name);
    std::atomic<bool> stop{false};
    std::thread watcher([&] {
      std::string text;
      while (!stop) {
        if (read_file(record, text) == 0 && !std::regex_match(text, whole) && torn.size() < 5)
          torn.push_back("round " + std::to_string(round) + ": [" + text + "]");
      }
    });
    MountedEventfs m(o);
    auto started = m.Start();
    std::this_thread::sleep_for(100ms);  // past the daemon's last write of the record
    stop = true;
    watcher.join();
    ASSERT_TRUE(started);
    EXPECT_EQ(std::strtol(wait_owner(o.instance_name, m.pid()).c_str(), nullptr, 10), m.pid());
  }
  EXPECT_TRUE(torn.empty()) << "the ownership record was seen torn:\n" << join(torn);
}

// An instance someone else made, removed (with what was put in it) at the end.
class ForeignInstance {
 public:
  explicit ForeignInstance(std::string name) : name_(std::move(name)), path_(instance_dir(name_)) {
    made_ = ::mkdir(path_.c_str(), 0755) == 0;
  }
  ~ForeignInstance() {
    if (!made_) return;
    const std::string trig = path_ + "/events/sched/sched_switch/trigger";
    for (const auto& l : trigger_lines(slurp(trig))) write_once(trig, "!" + l.substr(0, l.find(':')));
    write_once(path_ + "/events/enable", "0");
    ::rmdir(path_.c_str());
  }
  bool made() const { return made_; }
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

 private:
  std::string name_, path_;
  bool made_ = false;
};

TEST_F(ControlLifecycle, AnInstanceSomeoneElseMadeIsRefusedAndLeftAlone) {
  ForeignInstance foreign("eventfs-it-foreign-" + std::to_string(::getpid()));
  ASSERT_TRUE(foreign.made()) << foreign.path() << ": " << std::strerror(errno);
  ASSERT_FALSE(exists(owner_record(foreign.name())));
  const std::string sw = foreign.path() + "/events/sched/sched_switch";
  ASSERT_EQ(write_once(sw + "/trigger", "traceoff:7 if prev_pid == 4242"), 0);
  ASSERT_EQ(write_once(sw + "/filter", "prev_pid == 4242"), 0);
  ASSERT_EQ(write_once(foreign.path() + "/events/sched/sched_wakeup/enable", "1"), 0);
  auto snapshot = [&] {
    return std::vector<std::string>{slurp(sw + "/trigger"), slurp(sw + "/filter"), slurp(sw + "/enable"),
                                    slurp(foreign.path() + "/events/sched/sched_wakeup/enable"),
                                    slurp(foreign.path() + "/tracing_on")};
  };
  const auto before = snapshot();

  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string mnt = dir / "mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  for (bool fg : {true, false}) {
    std::vector<std::string> argv = {kBinary, "-o", "instance=" + foreign.name(), mnt};
    if (fg) argv.push_back("-f");
    auto r = run(argv, 10s);
    bool mounted = mounted_at(mnt);
    if (mounted) force_unmount(mnt);
    EXPECT_FALSE(r.timed_out) << "the daemon started on a foreign instance: " << r.describe();
    EXPECT_TRUE(r.exited() && r.exit_code() != 0) << r.describe();
    EXPECT_FALSE(mounted) << r.describe();
    EXPECT_NE(r.err.find(foreign.name()), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("not made by eventfs"), std::string::npos) << r.describe();
    EXPECT_TRUE(exists(foreign.path()));
    EXPECT_EQ(snapshot(), before) << "the foreign instance was changed";
    EXPECT_FALSE(exists(owner_record(foreign.name()))) << "the daemon claimed the foreign instance";
  }
}

TEST_F(ControlLifecycle, ASecondDaemonOnALiveDaemonsInstanceIsRefused) {
  MountedEventfs first;
  ASSERT_TRUE(first.Start());
  const std::string inst = instance_dir(first.instance());
  ASSERT_TRUE(Accepts(first, "sched_switch/trigger", "traceoff:5 if prev_pid == -1\n"));
  ASSERT_TRUE(Accepts(first, "sched_switch/enable", "1\n"));
  const std::string owner_before = slurp(owner_record(first.instance()));
  const std::string trig_before = slurp(inst + "/events/sched/sched_switch/trigger");

  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string mnt = dir / "mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  auto r = run({kBinary, "-o", "instance=" + first.instance(), mnt, "-f"}, 10s);
  bool mounted = mounted_at(mnt);
  if (mounted) force_unmount(mnt);
  EXPECT_FALSE(r.timed_out) << r.describe();
  EXPECT_TRUE(r.exited() && r.exit_code() != 0) << r.describe();
  EXPECT_FALSE(mounted);
  EXPECT_NE(r.err.find(first.instance()), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find(std::to_string(first.pid())), std::string::npos) << r.describe();
  // The first daemon and its instance are untouched and still served.
  EXPECT_TRUE(process_alive(first.pid()));
  EXPECT_EQ(slurp(owner_record(first.instance())), owner_before);
  EXPECT_EQ(slurp(inst + "/events/sched/sched_switch/trigger"), trig_before);
  EXPECT_EQ(slurp(inst + "/events/sched/sched_switch/enable").substr(0, 1), "1");
  EXPECT_EQ(slurp(first / "sched_switch/trigger"), "traceoff:count=5 if prev_pid == -1\n");
  first.Stop();
  EXPECT_FALSE(exists(inst));
}

TEST_F(ControlLifecycle, ABackgroundDaemonOwnsItsInstanceAndRemovesItAtUnmount) {
  MountOptions o;
  o.foreground = false;
  MountedEventfs m(o);
  ASSERT_TRUE(m.Start());
  ASSERT_GT(m.pid(), 0) << "no daemon found for the mount";
  const std::string inst = instance_dir(m.instance());
  EXPECT_TRUE(exists(inst));
  // The record names the daemon, not the command that launched it and is gone.
  std::string owner = wait_owner(m.instance(), m.pid());
  EXPECT_EQ(std::strtol(owner.c_str(), nullptr, 10), m.pid()) << owner;
  ArmEverything(m);
  if (HasFatalFailure()) return;
  auto r = run({"/usr/bin/fusermount3", "-u", m.path()});
  ASSERT_EQ(r.exit_code(), 0) << r.describe();
  ASSERT_TRUE(m.WaitExit(10s).has_value()) << "the daemon did not end after the unmount";
  EXPECT_FALSE(exists(inst));
  EXPECT_FALSE(exists(owner_record(m.instance())));
}

// ---------------------------------------------------------------------------
// 2. Accepted writes: what reaches the instance, and what reads back.

class ControlTranslation : public ControlTest {
 protected:
  void SetUp() override {
    ControlTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(catalog_dir_.ok());
    catalog_ = write_task_switch_catalog(catalog_dir_);
    m_ = std::make_unique<MountedEventfs>(std::vector<std::string>{"-o", "catalog=" + catalog_});
    ASSERT_TRUE(m_->Start());
    inst_ = instance_dir(m_->instance());
    ASSERT_TRUE(exists(m_->path() + "/task_switch/trigger")) << slurp(*m_ / "available_events");
  }
  void TearDown() override {
    if (m_) {
      m_->Stop();
      EXPECT_FALSE(exists(inst_)) << "instance left behind";
      EXPECT_EQ(m_->Stderr(), "");
      m_.reset();
    }
    ControlTest::TearDown();
  }
  // The instance's file (relative to its events/) and the mount's file.
  std::string K(const std::string& rel) const { return slurp(inst_ + "/events/" + rel); }
  std::string M(const std::string& rel) const { return slurp(*m_ / rel); }
  ::testing::AssertionResult Write(const std::string& rel, std::string_view data) { return Accepts(*m_, rel, data); }

  TempDir catalog_dir_;
  std::string catalog_;
  std::unique_ptr<MountedEventfs> m_;
  std::string inst_;
};

TEST_F(ControlTranslation, EnableIsTheRawEventsEnableInTheInstance) {
  const std::string k = "sched/sched_switch/enable";
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  EXPECT_EQ(K(k), "1\n");
  EXPECT_EQ(M("sched_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "1"));  // no newline (echo -n)
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0"));
  EXPECT_EQ(K(k), "0\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));  // twice: not an error, as on tracefs
  EXPECT_EQ(K(k), "0\n");
  // raw/ toggles the raw event.
  ASSERT_TRUE(Write("raw/sched/sched_process_free/enable", "1\n"));
  EXPECT_EQ(K("sched/sched_process_free/enable"), "1\n");
  EXPECT_EQ(M("raw/sched/sched_process_free/enable"), "1\n");
  ASSERT_TRUE(Write("raw/sched/sched_process_free/enable", "0\n"));
  EXPECT_EQ(K("sched/sched_process_free/enable"), "0\n");
  EXPECT_EQ(M("raw/sched/sched_process_free/enable"), "0\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/enable", "1\n"));
  EXPECT_EQ(K("sched/sched_wakeup/enable"), "1\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/enable", "0\n"));
  EXPECT_EQ(K("sched/sched_wakeup/enable"), "0\n");
}

TEST_F(ControlTranslation, EnableIsReferenceCountedOverTheStableEventsOfOneRawEvent) {
  const std::string k = "sched/sched_switch/enable";
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("task_switch/enable", "1\n"));
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "1\n") << "task_switch still uses sched:sched_switch";
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  EXPECT_EQ(M("task_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));  // a second 0 does not take task_switch's use away
  EXPECT_EQ(K(k), "1\n");
  ASSERT_TRUE(Write("task_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
  EXPECT_EQ(M("task_switch/enable"), "0\n");
  // raw/ counts as one more user.
  ASSERT_TRUE(Write("raw/sched/sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("sched_switch/enable", "1\n"));
  ASSERT_TRUE(Write("raw/sched/sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "1\n");
  EXPECT_EQ(M("sched_switch/enable"), "1\n");
  ASSERT_TRUE(Write("sched_switch/enable", "0\n"));
  EXPECT_EQ(K(k), "0\n");
}

TEST_F(ControlTranslation, FiltersAreRenamedAndTaskStateLettersBecomeBitTests) {
  const std::string k = "sched/sched_switch/filter";
  EXPECT_EQ(K(k), "none\n");
  EXPECT_EQ(M("sched_switch/filter"), "none\n");
  ASSERT_TRUE(Write("task_switch/filter", "from == 1 && to != 2\n"));
  EXPECT_EQ(K(k), "prev_pid == 1 && next_pid != 2\n");
  EXPECT_EQ(M("task_switch/filter"), "from == 1 && to != 2\n");
  EXPECT_EQ(M("sched_switch/filter"), "prev_pid == 1 && next_pid != 2\n");

  ASSERT_TRUE(Write("sched_switch/filter", "prev_state == 'S'\n"));
  EXPECT_EQ(K(k), "(prev_state & 1)\n");
  EXPECT_EQ(M("sched_switch/filter"), "prev_state == 'S'\n");

  ASSERT_TRUE(Write("task_switch/filter", "state == 'D'\n"));
  EXPECT_EQ(K(k), "(prev_state & 2 && !(prev_state & 1))\n");
  EXPECT_EQ(M("task_switch/filter"), "state == 'D'\n");

  ASSERT_TRUE(Write("task_switch/filter", "from == 7 && state != 'S'\n"));
  EXPECT_EQ(K(k), "prev_pid == 7 && !(prev_state & 1)\n");
  EXPECT_EQ(M("task_switch/filter"), "from == 7 && state != 'S'\n");

  ASSERT_TRUE(Write("task_switch/filter", "0\n"));
  EXPECT_EQ(K(k), "none\n");
  EXPECT_EQ(M("task_switch/filter"), "none\n");
  EXPECT_EQ(M("sched_switch/filter"), "none\n");

  // Filters of other stable events, and raw/ as it is.
  ASSERT_TRUE(Write("sched_wakeup/filter", "pid == 1 || prio < 100\n"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "pid == 1 || prio < 100\n");
  ASSERT_TRUE(Write("sched_wakeup/filter", "0"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "none\n");
  ASSERT_TRUE(Write("raw/sched/sched_switch/filter", "prev_prio < 100\n"));
  EXPECT_EQ(K(k), "prev_prio < 100\n");
  EXPECT_EQ(M("raw/sched/sched_switch/filter"), "prev_prio < 100\n");
  ASSERT_TRUE(Write("raw/sched/sched_switch/filter", "0\n"));
  EXPECT_EQ(K(k), "none\n");
}

TEST_F(ControlTranslation, TriggersAreTranslatedAndReadBackInStableNames) {
  // pid -1 never runs: the counts stay as written (pid 1 is switched out now and then).
  const std::string k = "sched/sched_switch/trigger";
  ASSERT_TRUE(Write("sched_switch/trigger", "enable_event:sched_migrate_task if prev_pid == -1\n"));
  EXPECT_EQ(K(k), "enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1\n");
  EXPECT_EQ(M("sched_switch/trigger"), "enable_event:sched_migrate_task:unlimited if prev_pid == -1\n");

  ASSERT_TRUE(Write("sched_switch/trigger", "traceoff:5 if prev_pid == -1\n"));
  const std::string kernel = K(k);
  EXPECT_EQ(as_set(trigger_lines(kernel)),
            (std::set<std::string>{"enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1",
                                   "traceoff:count=5 if prev_pid == -1"}));
  // In the kernel's order, line for line.
  std::string expected;
  for (const auto& l : trigger_lines(kernel))
    expected += l.rfind("traceoff:", 0) == 0 ? l + "\n" : "enable_event:sched_migrate_task:unlimited if prev_pid == -1\n";
  EXPECT_EQ(M("sched_switch/trigger"), expected);

  // A trigger filter in task_switch's names, with a task state.
  ASSERT_TRUE(Write("task_switch/trigger", "stacktrace if from == 7 && state == 'D'\n"));
  EXPECT_TRUE(as_set(trigger_lines(K(k)))
                  .count("stacktrace:unlimited if prev_pid == 7 && (prev_state & 2 && !(prev_state & 1))"))
      << K(k);
  auto task_lines = trigger_lines(M("task_switch/trigger"));
  EXPECT_TRUE(as_set(task_lines).count("stacktrace:unlimited if from == 7 && state == 'D'")) << M("task_switch/trigger");
  // Each reader sees the other's triggers in its own field names.
  EXPECT_TRUE(as_set(task_lines).count("enable_event:sched_migrate_task:unlimited if from == -1"))
      << M("task_switch/trigger");
  for (const auto& l : trigger_lines(M("sched_switch/trigger")))
    EXPECT_EQ(l.find("from"), std::string::npos) << "task_switch's names in sched_switch/trigger: " << l;

  ASSERT_TRUE(Write("sched_switch/trigger", "!traceoff\n"));
  ASSERT_TRUE(Write("task_switch/trigger", "!stacktrace\n"));
  EXPECT_EQ(K(k), "enable_event:sched:sched_migrate_task:unlimited if prev_pid == -1\n");
  ASSERT_TRUE(Write("sched_switch/trigger", "!enable_event:sched_migrate_task\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  // No triggers: the kernel's header, as it is.
  const std::string header = M("sched_switch/trigger");
  EXPECT_EQ(header.rfind(kHeaderStart, 0), 0u) << header;
  EXPECT_EQ(header, K(k));
  EXPECT_NE(header.find("traceon traceoff stacktrace enable_event disable_event"), std::string::npos) << header;
  EXPECT_EQ(M("sched_wakeup/trigger"), K("sched/sched_wakeup/trigger"));
}

// Filters the daemon's own parser lets through but the kernel refuses: the
// kernel's errno and message, the caret in the user's text, and the filter
// that was there stays.
TEST_F(ControlTranslation, AFilterTheKernelRefusesKeepsThePreviousOneAndIsLoggedInStableTerms) {
  const std::string k = "sched/sched_switch/filter";
  ASSERT_TRUE(Write("task_switch/filter", "from == 1\n"));
  ASSERT_EQ(K(k), "prev_pid == 1\n");
  ASSERT_EQ(write_once(*m_ / "error_log", "", O_WRONLY | O_TRUNC), 0);

  const std::string bad = "state == \"S\" || from == bogus";
  EXPECT_EQ(write_once(*m_ / "task_switch/filter", bad + "\n"), EINVAL);
  EXPECT_EQ(K(k), "prev_pid == 1\n") << "the refused filter dropped the previous one";
  EXPECT_EQ(M("task_switch/filter"), "from == 1\n");
  auto lines = split_lines(M("error_log"));
  ASSERT_EQ(lines.size(), 3u) << M("error_log");
  EXPECT_NE(lines[0].find(" task_switch/filter: error: "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "  Command: " + bad);
  // The caret points into "bogus" in what the user wrote (the kernel's points into its raw text).
  std::size_t caret = lines[2].find('^'), at = 11 + bad.find("bogus");
  EXPECT_TRUE(caret >= at && caret < at + 5) << "\n" << lines[1] << "\n" << lines[2];
  EXPECT_EQ(slurp(inst_ + "/error_log"), "") << "the instance's own error_log is consumed";

  EXPECT_EQ(write_once(*m_ / "raw/sched/sched_switch/filter", "prev_pid == zzz\n"), EINVAL);
  EXPECT_EQ(K(k), "prev_pid == 1\n");
  EXPECT_NE(M("error_log").find(" raw/sched/sched_switch/filter: error: "), std::string::npos) << M("error_log");

  EXPECT_EQ(write_once(*m_ / "sched_wakeup/filter", "pid ~ \"x*\"\n"), EINVAL);
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "none\n");
  EXPECT_EQ(M("sched_wakeup/filter"), "none\n");

  // A trigger whose filter the kernel refuses is not added.
  const std::string trig_before = K("sched/sched_switch/trigger");
  EXPECT_EQ(write_once(*m_ / "task_switch/trigger", "traceoff if from == bogus\n"), EINVAL);
  EXPECT_EQ(K("sched/sched_switch/trigger"), trig_before);
  EXPECT_NE(M("error_log").find("  Command: traceoff if from == bogus\n"), std::string::npos) << M("error_log");
}

TEST_F(ControlTranslation, AStableGlobIsOneKernelTriggerPerEventAndItsRemovalRemovesThemAll) {
  const std::string k = "sched/sched_switch/trigger";
  ASSERT_TRUE(Write("sched_switch/trigger", "enable_event:sched_process_*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), (std::set<std::string>{"enable_event:sched:sched_process_fork:unlimited",
                                                                "enable_event:sched:sched_process_exec:unlimited",
                                                                "enable_event:sched:sched_process_exit:unlimited"}));
  EXPECT_EQ(as_set(trigger_lines(M("sched_switch/trigger"))),
            (std::set<std::string>{"enable_event:sched_process_fork:unlimited",
                                   "enable_event:sched_process_exec:unlimited",
                                   "enable_event:sched_process_exit:unlimited"}));
  ASSERT_TRUE(Write("sched_switch/trigger", "!enable_event:sched_process_*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  EXPECT_EQ(M("sched_switch/trigger").rfind(kHeaderStart, 0), 0u);
}

TEST_F(ControlTranslation, ARawGlobIsExpandedOverTheKernelsEvents) {
  const std::string k = "sched/sched_switch/trigger";
  // softirq_*: as many kernel triggers as this kernel has irq:softirq_* events.
  auto softirqs = events_matching("irq", "softirq_*");
  ASSERT_GE(softirqs.size(), 2u);
  std::set<std::string> expected, expected_stable;
  for (const auto& ev : softirqs) {
    expected.insert("enable_event:irq:" + ev + ":unlimited");
    bool stable = ev == "softirq_entry" || ev == "softirq_exit";
    expected_stable.insert(stable ? "enable_event:" + ev + ":unlimited" : "enable_event:irq:" + ev + ":unlimited");
  }
  EXPECT_TRUE(expected.count("enable_event:irq:softirq_entry:unlimited"));
  EXPECT_TRUE(expected.count("enable_event:irq:softirq_exit:unlimited"));
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "enable_event:irq:softirq_*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), expected);
  EXPECT_EQ(M("raw/sched/sched_switch/trigger"), K(k));  // raw/ as the kernel prints it
  EXPECT_EQ(as_set(trigger_lines(M("sched_switch/trigger"))), expected_stable);
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "!enable_event:irq:softirq_*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);

  // The proposal's own example: one kernel trigger per block event.
  auto blocks = events_matching("block", "*");
  ASSERT_GT(blocks.size(), 2u);
  expected.clear();
  for (const auto& ev : blocks) expected.insert("enable_event:block:" + ev + ":unlimited");
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "enable_event:block:*\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))), expected);
  EXPECT_EQ(trigger_lines(K(k)).size(), blocks.size());
  // Each block event is held by its trigger (soft mode: "0*", or "1*" once fired).
  for (const auto& ev : blocks) EXPECT_EQ(K("block/" + ev + "/enable").substr(1), "*\n") << ev;
  ASSERT_TRUE(Write("raw/sched/sched_switch/trigger", "!enable_event:block:*\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
  for (const auto& ev : blocks) EXPECT_EQ(K("block/" + ev + "/enable").find('*'), std::string::npos) << ev;
}

// The 2013 proposal's first example, verbatim: two commands in one write,
// two kernel triggers; one write removes both. A write whose second command
// the kernel would refuse (its target is already held by a trigger of the
// same kind) is refused whole: its first command is not applied either.
TEST_F(ControlTranslation, TheProposalsFirstExampleIsTwoTriggersAndAWriteIsAllOrNothing) {
  const std::string k = "syscalls/sys_enter_read/trigger";
  ASSERT_TRUE(exists(inst_ + "/events/" + k)) << "no syscalls:sys_enter_read on this kernel";
  ASSERT_TRUE(Write("raw/syscalls/sys_enter_read/trigger",
                    "enable_event:filemap:mm_filemap_add_to_page_cache "
                    "enable_event:filemap:mm_filemap_delete_from_page_cache\n"));
  EXPECT_EQ(as_set(trigger_lines(K(k))),
            (std::set<std::string>{"enable_event:filemap:mm_filemap_add_to_page_cache:unlimited",
                                   "enable_event:filemap:mm_filemap_delete_from_page_cache:unlimited"}));
  const std::string before = K(k);
  EXPECT_EQ(write_once(*m_ / "raw/syscalls/sys_enter_read/trigger",
                       "stacktrace:3 if fd == 1\ndisable_event:filemap:mm_filemap_add_to_page_cache\n"),
            EEXIST);
  EXPECT_EQ(K(k), before);
  const std::string log = M("error_log");
  EXPECT_NE(log.find("raw/syscalls/sys_enter_read/trigger: error: File exists: "
                     "'enable_event:filemap:mm_filemap_add_to_page_cache:unlimited' is set already"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("  Command: stacktrace:3 if fd == 1\\x0adisable_event:"), std::string::npos) << log;
  ASSERT_TRUE(Write("raw/syscalls/sys_enter_read/trigger",
                    "!enable_event:filemap:mm_filemap_add_to_page_cache\n"
                    "!enable_event:filemap:mm_filemap_delete_from_page_cache\n"));
  EXPECT_TRUE(trigger_lines(K(k)).empty()) << K(k);
}

// ---------------------------------------------------------------------------
// 3. Refused writes: the errno, a line in error_log, and no change.

class ControlRefusedWrite : public ControlTest, public ::testing::WithParamInterface<RefusedWrite> {
 protected:
  // One mount for the whole table, primed so that a refusal that cleared
  // or replaced something would show.
  static void SetUpTestSuite() {
    if (!live_skip_reason().empty()) return;
    mount_ = new MountedEventfs();
    auto r = mount_->Start();
    if (!r) {
      setup_error_ = r.message();
      return;
    }
    for (auto [rel, data] : std::vector<std::pair<const char*, const char*>>{
             {"sched_switch/enable", "1\n"},
             {"sched_switch/filter", "prev_pid != 99999\n"},
             {"sched_switch/trigger", "enable_event:sched_wakeup if prev_pid == -1\n"},
             {"sched_switch/trigger", "stacktrace:3 if prev_pid == -2\n"}}) {
      if (auto a = Accepts(*mount_, rel, data); !a) {
        setup_error_ = a.message();
        return;
      }
    }
  }
  static void TearDownTestSuite() {
    delete mount_;
    mount_ = nullptr;
  }
  void SetUp() override {
    ControlTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(mount_ && setup_error_.empty()) << setup_error_;
    ASSERT_TRUE(process_alive(mount_->pid())) << mount_->Stderr();
    ASSERT_EQ(write_once(*mount_ / "error_log", "", O_WRONLY | O_TRUNC), 0);  // `> error_log`
    ASSERT_EQ(slurp(*mount_ / "error_log"), "");
  }
  static std::vector<std::string> InstanceState() {
    const std::string d = instance_dir(mount_->instance()) + "/events/sched/sched_switch/";
    return {slurp(d + "trigger"), slurp(d + "filter"), slurp(d + "enable")};
  }
  // The error_log line for a refusal at `where` whose message holds `needle`.
  static bool LogHas(const std::string& log, const std::string& where, const std::string& needle) {
    for (const auto& l : split_lines(log))
      if (l.rfind("[", 0) == 0 && l.find(" " + where + ": error: ") != std::string::npos &&
          l.find(needle) != std::string::npos)
        return true;
    return false;
  }

  static MountedEventfs* mount_;
  static std::string setup_error_;
};

MountedEventfs* ControlRefusedWrite::mount_ = nullptr;
std::string ControlRefusedWrite::setup_error_;

TEST_P(ControlRefusedWrite, FailsWithItsErrnoALogLineAndNoChange) {
  const RefusedWrite& w = GetParam();
  if (w.data.empty()) GTEST_SKIP() << "a 0-length write need not reach the daemon";
  const auto before = InstanceState();
  ASSERT_EQ(trigger_lines(before[0]).size(), 2u) << before[0];
  int fd = ::open((*mount_ / w.file).c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  ASSERT_GE(fd, 0) << w.file << ": " << std::strerror(errno);
  ssize_t n = ::write(fd, w.data.data(), w.data.size());
  int e = errno;
  ::close(fd);
  EXPECT_EQ(n, -1) << "accepted: '" << printable(w.data) << "'";
  if (n < 0) {
    EXPECT_EQ(e, w.err) << std::strerror(e) << " instead of " << std::strerror(w.err);
  }
  const std::string log = slurp(*mount_ / "error_log");
  EXPECT_TRUE(LogHas(log, w.file, w.log)) << "no line for " << w.file << " with '" << w.log << "' in:\n" << log;
  EXPECT_NE(log.find("\n  Command: "), std::string::npos) << log;
  EXPECT_EQ(InstanceState(), before) << "a refused write changed the instance";
}

INSTANTIATE_TEST_SUITE_P(ControlTable, ControlRefusedWrite, ::testing::ValuesIn(::eventfs::testing::refused_writes()),
                         [](const auto& info) {
                           std::string n = info.param.what;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST_F(ControlRefusedWrite, ADuplicateTriggerIsTheKernelsEexistAndAGlobIsUndoneWhole) {
  const auto before = InstanceState();
  // The primed trigger again.
  EXPECT_EQ(write_once(*mount_ / "sched_switch/trigger", "enable_event:sched_wakeup if prev_pid == -1\n"), EEXIST);
  std::string log = slurp(*mount_ / "error_log");
  EXPECT_TRUE(LogHas(log, "sched_switch/trigger", "")) << log;
  EXPECT_NE(log.find("  Command: enable_event:sched_wakeup if prev_pid == -1\n"), std::string::npos) << log;
  EXPECT_EQ(InstanceState(), before);
  // sched_migrate_task goes in, sched_wakeup is a duplicate: migrate must go out again.
  EXPECT_EQ(write_once(*mount_ / "sched_switch/trigger", "enable_event:sched_[mw]*\n"), EEXIST);
  EXPECT_EQ(InstanceState(), before) << "a refused glob left part of itself behind";
  EXPECT_NE(slurp(*mount_ / "error_log").find("  Command: enable_event:sched_[mw]*\n"), std::string::npos);
  // The kernel's own trigger type rule: one stacktrace per event.
  EXPECT_EQ(write_once(*mount_ / "sched_switch/trigger", "stacktrace if prev_pid == 9\n"), EEXIST);
  EXPECT_EQ(InstanceState(), before);
  // The instance's own error_log was consumed: eventfs's log is the one to read.
  EXPECT_EQ(slurp(instance_dir(mount_->instance()) + "/error_log"), "");
}

// Every event's enable and trigger in the instance, and whether tracing is on.
std::map<std::string, std::string> WholeInstance(const std::string& inst) {
  std::map<std::string, std::string> s;
  const std::string events = inst + "/events";
  for (const auto& sys : list_dir(events, true))
    for (const auto& ev : list_dir(events + "/" + sys, true))
      for (const char* f : {"enable", "trigger"}) {
        std::string rel = sys + "/" + ev + "/" + f;
        s[rel] = slurp(events + "/" + rel);
      }
  s["tracing_on"] = slurp(inst + "/tracing_on");
  return s;
}

// A glob whose part the kernel would refuse is refused before any part of it
// is armed: armed triggers fire (sched_switch is enabled and switches are
// forced meanwhile) and would leave their targets on. The whole instance is
// as it was, also after the raw glob over every event, which is refused at
// once instead of after a kernel write per event.
TEST_F(ControlRefusedWrite, ARefusedGlobLeavesEveryEventOfTheInstanceAsItWas) {
  const std::string inst = instance_dir(mount_->instance());
  const auto before = WholeInstance(inst);
  std::atomic<bool> stop{false};
  std::thread switches([&] {
    while (!stop) ping_pong(20);
  });
  EXPECT_EQ(write_once(*mount_ / "sched_switch/trigger", "enable_event:sched_*\n"), EEXIST);
  EXPECT_EQ(write_once(*mount_ / "raw/sched/sched_switch/trigger", "enable_event:sched:sched_wakeup\n"), EEXIST);
  auto start = Clock::now();
  EXPECT_EQ(write_once(*mount_ / "raw/sched/sched_switch/trigger", "enable_event:*:*\n"), EEXIST);
  auto took = Clock::now() - start;
  std::this_thread::sleep_for(100ms);
  stop = true;
  switches.join();
  EXPECT_EQ(WholeInstance(inst), before) << "a refused glob changed the instance";
  EXPECT_LT(took, 2s) << "the refused raw glob took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_TRUE(LogHas(slurp(*mount_ / "error_log"), "raw/sched/sched_switch/trigger", "is set already"));
}

TEST_F(ControlRefusedWrite, WritingErrorLogClearsIt) {
  ASSERT_EQ(write_once(*mount_ / "sched_switch/enable", "2\n"), EINVAL);
  ASSERT_EQ(write_once(*mount_ / "sched_switch/filter", "prev_state < 'S'\n"), EINVAL);
  std::string log = slurp(*mount_ / "error_log");
  auto lines = split_lines(log);
  ASSERT_EQ(lines.size(), 6u) << log;  // two entries of three lines
  EXPECT_TRUE(LogHas(log, "sched_switch/enable", "Invalid value"));
  EXPECT_TRUE(LogHas(log, "sched_switch/filter", "Illegal operation"));
  EXPECT_EQ(lines[1], "  Command: 2");
  EXPECT_EQ(lines[2], std::string(11, ' ') + "^");
  // `> error_log`: an open with O_TRUNC and no write.
  ASSERT_EQ(write_once(*mount_ / "error_log", "", O_WRONLY | O_TRUNC), 0);
  EXPECT_EQ(slurp(*mount_ / "error_log"), "");
  // `echo > error_log`.
  ASSERT_EQ(write_once(*mount_ / "sched_switch/enable", "on\n"), EINVAL);
  ASSERT_NE(slurp(*mount_ / "error_log"), "");
  ASSERT_EQ(write_once(*mount_ / "error_log", "\n"), 0);
  EXPECT_EQ(slurp(*mount_ / "error_log"), "");
}

// ---------------------------------------------------------------------------
// 4. Triggers armed through the mount fire in the kernel.

class ControlTriggersFire : public ControlTest {};

TEST_F(ControlTriggersFire, EnableEventAndTraceoffTakeEffect) {
  const std::string top_tracing_on = slurp(std::string(kLiveTracefs) + "/tracing_on");
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  ASSERT_EQ(slurp(inst + "/tracing_on"), "1\n");
  const std::string migrate = inst + "/events/sched/sched_migrate_task/enable";
  ASSERT_EQ(slurp(migrate), "0\n");
  ASSERT_EQ(slurp(m / "sched_migrate_task/enable"), "0\n");

  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "enable_event:sched_migrate_task\n"));
  // Armed, the target is soft-disabled until the trigger fires.
  EXPECT_TRUE(slurp(migrate) == "0*\n" || slurp(migrate) == "1*\n") << slurp(migrate);
  EXPECT_TRUE(switch_until([&] { return slurp(migrate) == "1*\n"; })) << slurp(migrate);
  EXPECT_EQ(slurp(m / "sched_migrate_task/enable"), "1*\n");

  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "traceoff\n"));
  EXPECT_TRUE(switch_until([&] { return slurp(inst + "/tracing_on") == "0\n"; })) << slurp(inst + "/tracing_on");
  EXPECT_EQ(as_set(trigger_lines(slurp(m / "sched_switch/trigger"))),
            (std::set<std::string>{"enable_event:sched_migrate_task:unlimited", "traceoff:unlimited"}));
  EXPECT_EQ(slurp(std::string(kLiveTracefs) + "/tracing_on"), top_tracing_on) << "top-level tracing switched";

  // Disarmed, the target is no longer held (a fired enable_event leaves it enabled, as on tracefs).
  ASSERT_TRUE(Accepts(m, "sched_switch/trigger", "!enable_event:sched_migrate_task\n"));
  EXPECT_EQ(slurp(migrate).find('*'), std::string::npos) << slurp(migrate);
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

// ---------------------------------------------------------------------------
// 5. Many threads writing and reading control files at once.

struct Worker {
  // Enable and filter of an event this thread alone touches.
  std::string enable_rel, filter_rel, kernel_dir;  // kernel_dir under the instance's events/
  std::vector<std::string> filters;                // in the event's names; "0" clears
  // A trigger this thread alone adds and removes.
  std::string trigger_rel, trigger_kernel;  // files
  std::string add, remove;                  // what is written
  std::string kernel_line, mount_line;      // what the instance and the mount show while it is there
};

std::vector<Worker> make_workers() {
  std::vector<Worker> w;
  const std::vector<std::pair<std::string, std::string>> toggled = {
      {"sched_wakeup", "pid"},       {"sched_process_fork", "parent_pid"}, {"sched_process_exec", "pid"},
      {"sched_process_exit", "pid"}, {"irq_handler_entry", "irq"},         {"irq_handler_exit", "irq"},
      {"softirq_entry", "vec"},      {"softirq_exit", "vec"}};
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"sched_migrate_task", "sched:sched_migrate_task"}, {"sys_enter", "raw_syscalls:sys_enter"},
      {"sys_exit", "raw_syscalls:sys_exit"},              {"cpu_idle", "power:cpu_idle"},
      {"cpu_frequency", "power:cpu_frequency"},           {"block_rq_issue", "block:block_rq_issue"},
      {"block_rq_complete", "block:block_rq_complete"}};
  auto sources = live_sources();
  for (int t = 0; t < 10; ++t) {
    Worker x;
    std::string field;
    if (t < 8) {
      const auto& [ev, f] = toggled[t];
      x.enable_rel = ev + "/enable";
      x.filter_rel = ev + "/filter";
      x.kernel_dir = sources[ev];
      field = f;
    } else {
      std::string ev = t == 8 ? "sched_process_free" : "sched_process_wait";
      x.enable_rel = "raw/sched/" + ev + "/enable";
      x.filter_rel = "raw/sched/" + ev + "/filter";
      x.kernel_dir = "sched/" + ev;
      field = "pid";
    }
    x.filters = {field + " == " + std::to_string(100 + t), field + " != " + std::to_string(200 + t) + " && " + field +
                                                               " != 7",
                 "0"};
    std::string pid = std::to_string(-(t + 1));
    x.trigger_rel = "sched_switch/trigger";
    x.trigger_kernel = "sched/sched_switch/trigger";
    if (t < 7) {
      x.add = "enable_event:" + targets[t].first + " if prev_pid == " + pid;
      x.remove = "!enable_event:" + targets[t].first;
      x.kernel_line = "enable_event:" + targets[t].second + ":unlimited if prev_pid == " + pid;
      x.mount_line = "enable_event:" + targets[t].first + ":unlimited if prev_pid == " + pid;
    } else if (t == 7) {
      x.add = "traceoff:3 if prev_pid == " + pid;
      x.remove = "!traceoff";
      x.kernel_line = x.mount_line = "traceoff:count=3 if prev_pid == " + pid;
    } else if (t == 8) {
      x.add = "stacktrace if prev_pid == " + pid;
      x.remove = "!stacktrace";
      x.kernel_line = x.mount_line = "stacktrace:unlimited if prev_pid == " + pid;
    } else {
      // traceon and traceoff are one kind of trigger to the kernel: another event.
      x.trigger_rel = "cpu_frequency/trigger";
      x.trigger_kernel = sources["cpu_frequency"] + "/trigger";
      x.add = "traceon if cpu_id == 9999";
      x.remove = "!traceon";
      x.kernel_line = x.mount_line = "traceon:unlimited if cpu_id == 9999";
    }
    w.push_back(std::move(x));
  }
  return w;
}

class ControlConcurrency : public ControlTest {};

TEST_F(ControlConcurrency, TenThreadsWritingAndReadingLeaveAConsistentState) {
  auto sources = live_sources();
  for (const char* ev : {"sched_switch", "sched_wakeup", "cpu_frequency", "sys_enter", "block_rq_issue"})
    if (!sources.count(ev)) GTEST_SKIP() << ev << " is not available on this kernel";
  auto workers = make_workers();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  const auto refused = ::eventfs::testing::refused_writes();

  // Every line a trigger file may show, and every filter text an event may show.
  std::map<std::string, std::set<std::string>> possible_triggers;  // mount file -> lines
  std::map<std::string, std::set<std::string>> possible_filters;   // mount file -> texts
  std::vector<std::string> readable = {"error_log", "sched_switch/enable", "sched_switch/filter"};
  for (const auto& w : workers) {
    possible_triggers[w.trigger_rel].insert(w.mount_line);
    possible_filters[w.filter_rel].insert("none\n");
    for (const auto& f : w.filters)
      if (f != "0") possible_filters[w.filter_rel].insert(f + "\n");
    readable.push_back(w.enable_rel);
    readable.push_back(w.filter_rel);
    readable.push_back(w.trigger_rel);
  }
  static const std::regex log_head(R"(^\[ *\d+\.\d{6}\] \S+: error: .+$)");
  static const std::regex log_caret(R"(^ {11,}\^$)");

  struct Result {
    long writes = 0, refusals = 0, reads = 0;
    std::vector<std::string> problems;
    int enabled = 0;            // last accepted enable
    std::string filter = "0";   // last accepted filter
    bool trigger = false;       // last accepted trigger action: added
  };
  std::vector<Result> results(workers.size());
  const auto deadline = Clock::now() + 3s;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < workers.size(); ++t) {
    threads.emplace_back([&, t] {
      const Worker& w = workers[t];
      Result& r = results[t];
      std::mt19937 rng(static_cast<unsigned>(t) * 2654435761u + 17);
      auto problem = [&](const std::string& p) {
        if (r.problems.size() < 5) r.problems.push_back("thread " + std::to_string(t) + ": " + p);
      };
      auto accepted = [&](const std::string& rel, const std::string& data) {
        ++r.writes;
        int e = write_once(m / rel, data + "\n");
        if (e != 0) problem("'" + data + "' to " + rel + ": " + (e < 0 ? "short write" : std::strerror(e)));
        return e == 0;
      };
      while (Clock::now() < deadline) {
        // Trigger and enable writes cost the kernel an RCU grace period or
        // so each (milliseconds): they are the rarer operations.
        unsigned op = rng() % 100;
        if (op < 10) {
          int on = static_cast<int>(rng() % 2);
          if (accepted(w.enable_rel, std::to_string(on))) r.enabled = on;
        } else if (op < 25) {
          const std::string& f = w.filters[rng() % w.filters.size()];
          if (accepted(w.filter_rel, f)) r.filter = f;
        } else if (op < 33) {
          bool add = !r.trigger;  // alternate: never a duplicate
          if (accepted(w.trigger_rel, add ? w.add : w.remove)) r.trigger = add;
        } else if (op < 45) {
          const RefusedWrite& bad = refused[rng() % refused.size()];
          if (bad.data.empty()) continue;
          ++r.refusals;
          int e = write_once(m / bad.file, bad.data);
          if (e != bad.err)
            problem(std::string("refused write '") + bad.what + "': " + (e ? std::strerror(e) : "accepted"));
        } else {
          const std::string& rel = readable[rng() % readable.size()];
          std::string text;
          ++r.reads;
          if (int e = read_file(m / rel, text)) {
            problem("read " + rel + ": " + std::strerror(e));
            continue;
          }
          if (rel == "error_log") {
            auto lines = split_lines(text);
            bool ok = lines.size() % 3 == 0;
            for (std::size_t i = 0; ok && i < lines.size(); i += 3)
              ok = std::regex_match(lines[i], log_head) && lines[i + 1].rfind("  Command: ", 0) == 0 &&
                   std::regex_match(lines[i + 2], log_caret);
            if (!ok) problem("error_log malformed: " + head_lines(text, 6));
          } else if (rel.size() > 7 && rel.substr(rel.size() - 7) == "/enable") {
            if (text != "0\n" && text != "1\n" && text != "0*\n" && text != "1*\n") problem(rel + ": [" + text + "]");
          } else if (rel.size() > 7 && rel.substr(rel.size() - 7) == "/filter") {
            auto it = possible_filters.find(rel);
            if (it != possible_filters.end() && !it->second.count(text)) problem(rel + ": [" + text + "]");
            if (rel == "sched_switch/filter" && text != "none\n") problem(rel + ": [" + text + "]");
          } else if (text.rfind("#", 0) != 0) {
            for (const auto& l : split_lines(text))
              if (!possible_triggers.at(rel).count(l)) problem(rel + ": unexpected line [" + l + "]");
          } else if (text.rfind(kHeaderStart, 0) != 0) {
            problem(rel + ": [" + text + "]");
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  long writes = 0, refusals = 0, reads = 0;
  std::vector<std::string> problems;
  for (const auto& r : results) {
    writes += r.writes;
    refusals += r.refusals;
    reads += r.reads;
    problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  }
  RecordProperty("writes", static_cast<int>(writes));
  RecordProperty("refusals", static_cast<int>(refusals));
  RecordProperty("reads", static_cast<int>(reads));
  EXPECT_TRUE(problems.empty()) << join(problems);
  EXPECT_GT(writes, 100) << "the threads hardly wrote anything";
  EXPECT_GT(refusals, 20);
  EXPECT_GT(reads, 100);

  // The daemon lived through it and still serves.
  ASSERT_TRUE(process_alive(m.pid())) << m.Stderr();
  ASSERT_TRUE(mounted_at(m.path()));
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);

  // Each thread's last word is what the instance holds.
  for (std::size_t t = 0; t < workers.size(); ++t) {
    const Worker& w = workers[t];
    const Result& r = results[t];
    const std::string kdir = inst + "/events/" + w.kernel_dir;
    EXPECT_EQ(slurp(kdir + "/enable"), std::to_string(r.enabled) + "\n") << "thread " << t << ": " << w.enable_rel;
    EXPECT_EQ(slurp(kdir + "/filter"), r.filter == "0" ? "none\n" : r.filter + "\n")
        << "thread " << t << ": " << w.filter_rel;
    EXPECT_EQ(slurp(m / w.filter_rel), r.filter == "0" ? "none\n" : r.filter + "\n") << "thread " << t;
    auto klines = as_set(trigger_lines(slurp(inst + "/events/" + w.trigger_kernel)));
    EXPECT_EQ(klines.count(w.kernel_line), r.trigger ? 1u : 0u) << "thread " << t << ": " << w.kernel_line;
    auto mlines = as_set(trigger_lines(slurp(m / w.trigger_rel)));
    EXPECT_EQ(mlines.count(w.mount_line), r.trigger ? 1u : 0u) << "thread " << t << ": " << w.mount_line;
  }
  // Every stable trigger file shows exactly the instance's triggers, translated.
  for (const auto& ev : split_lines(slurp(m / "available_events"))) {
    ASSERT_TRUE(sources.count(ev)) << ev;
    std::string kernel = slurp(inst + "/events/" + sources[ev] + "/trigger");
    EXPECT_EQ(slurp(m / (ev + "/trigger")), translate_kernel_triggers(kernel, sources)) << ev;
  }
  for (const char* ev : {"sched_process_free", "sched_process_wait"})
    EXPECT_EQ(slurp(m / (std::string("raw/sched/") + ev + "/trigger")),
              slurp(inst + "/events/sched/" + ev + "/trigger"));
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

}  // namespace
}  // namespace eventfs_it
