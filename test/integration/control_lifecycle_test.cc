// The daemon's tracefs instance on the real kernel: made at mount, removed at
// unmount or on SIGTERM/SIGINT, reclaimed after SIGKILL, a foreign one left alone.
// Nothing here may touch the top-level instance.

#include <fnmatch.h>
#include <functional>
#include <random>
#include <string_view>


#include "support/control_fixture.h"

namespace eventfs_it {
namespace {

using namespace control;

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

}  // namespace
}  // namespace eventfs_it
