// Every refused write of the shared table (support/refused_writes.h) on the real
// kernel: its errno, its error_log line, and no change; error_log itself.

#include <fnmatch.h>
#include <algorithm>
#include <functional>
#include <random>
#include <string_view>


#include "control/trigger.h"
#include "support/control_fixture.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace control;

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
  if (std::string_view(w.log).find("is not available") != std::string_view::npos) {
    // A row about a trigger command this project's kernel lacks; a kernel
    // that has it takes it (Debian's 5.10, 6.1 and 6.12 have snapshot).
    const std::string command(w.data.substr(0, w.data.find_first_of(":\n")));
    const auto available =
        ::eventfs::available_triggers_from(slurp(std::string(kLiveTracefs) + "/events/sched/sched_switch/trigger"));
    if (std::find(available.begin(), available.end(), command) != available.end())
      GTEST_SKIP() << "this kernel has " << command
                   << ": KernelLacks.ATriggerCommandTheKernelDoesNotListIsRefusedWithTheKernelsList checks the "
                      "refusal of each command it lacks";
  }
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
  EXPECT_LT(took, scaled(2s)) << "the refused raw glob took "
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

}  // namespace
}  // namespace eventfs_it
