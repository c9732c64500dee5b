// Saved variables on the real kernel: the `variables` file, filters and
// triggers that name a variable (the kernel gets the value, the mount shows
// the name), save: captures read from the event's records, and the 2013
// proposal's sys_enter_read / sys_exit_read scenario end to end.

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <regex>

#include "support/control_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace control;
using stream::errno_text;
using stream::wait_until;

// A stable event over the page-cache insertions the proposal's first example
// enables, so that its records reach trace_pipe.
constexpr const char* kPageCacheCatalog =
    "\nSTABLE_EVENT(page_cache_add, filemap:mm_filemap_add_to_page_cache, id=901,\n"
    "\t__field(u64, ino) = i_ino\n"
    "\t__field(u64, index) = index\n"
    ")\n";

std::vector<std::string> save_instances(const std::string& base) {
  std::vector<std::string> out;
  for (const auto& d : list_dir(std::string(kLiveTracefs) + "/instances", true))
    if (d.rfind(base + "-save", 0) == 0) out.push_back(d);
  return out;
}

class ControlVariables : public ControlTest {
 protected:
  void SetUp() override {
    ControlTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(catalog_dir_.ok());
    catalog_ = catalog_dir_ / "page-cache.catalog";
    ASSERT_TRUE(write_text_file(catalog_, slurp(std::string(kSourceDir) + "/src/catalog/default.catalog") +
                                              kPageCacheCatalog));
    m_ = std::make_unique<MountedEventfs>(std::vector<std::string>{"-o", "catalog=" + catalog_});
    ASSERT_TRUE(m_->Start());
    inst_ = instance_dir(m_->instance());
  }
  void TearDown() override {
    if (m_) {
      const std::string name = m_->instance();
      m_->Stop();
      EXPECT_FALSE(exists(inst_)) << "instance left behind";
      EXPECT_TRUE(save_instances(name).empty()) << "a save instance left behind";
      EXPECT_EQ(m_->Stderr(), "");
      m_.reset();
    }
    ControlTest::TearDown();
  }
  std::string K(const std::string& rel) const { return slurp(inst_ + "/events/" + rel); }
  std::string M(const std::string& rel) const { return slurp(*m_ / rel); }
  ::testing::AssertionResult Write(const std::string& rel, std::string_view data, int flags = O_WRONLY | O_TRUNC) {
    int e = write_once(*m_ / rel, data, flags);
    if (e == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << rel << " refused " << printable(data) << ": " << errno_text(e)
                                         << "; error_log: " << M("error_log");
  }
  int WriteErrno(const std::string& rel, std::string_view data) { return write_once(*m_ / rel, data); }

  TempDir catalog_dir_;
  std::string catalog_;
  std::unique_ptr<MountedEventfs> m_;
  std::string inst_;
};

TEST_F(ControlVariables, AFilterNamingAVariableGetsItsValueInTheKernelAndShowsItsName) {
  EXPECT_EQ(M("variables"), "");
  ASSERT_TRUE(Write("variables", "target=1\n"));
  EXPECT_EQ(M("variables"), "target=1\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/filter", "pid == target\n"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "pid == 1\n");
  EXPECT_EQ(M("raw/sched/sched_wakeup/filter"), "pid == target\n");
  ASSERT_TRUE(Write("sched_switch/filter", "next_pid == target || prev_pid == target\n"));
  EXPECT_EQ(K("sched/sched_switch/filter"), "next_pid == 1 || prev_pid == 1\n");
  ASSERT_TRUE(Write("variables", "target=2\n"));
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "pid == 2\n");
  EXPECT_EQ(K("sched/sched_switch/filter"), "next_pid == 2 || prev_pid == 2\n");
  EXPECT_EQ(M("sched_switch/filter"), "next_pid == target || prev_pid == target\n");
  // Unset: the kernel is given a condition no event matches.
  ASSERT_TRUE(Write("variables", "target\n"));
  EXPECT_EQ(M("variables"), "target unset\n");
  EXPECT_EQ(K("sched/sched_wakeup/filter"), "common_pid < 0\n");
  // Refused writes change nothing and say why.
  EXPECT_EQ(WriteErrno("variables", "!target\n"), EBUSY);
  EXPECT_EQ(WriteErrno("variables", "x=1\nnext_pid=3\n"), EINVAL);
  EXPECT_NE(M("error_log").find("'next_pid' is a field name"), std::string::npos) << M("error_log");
  EXPECT_EQ(WriteErrno("variables", "common_pid=3\n"), EINVAL);
  EXPECT_EQ(M("variables"), "target unset\n");
  ASSERT_TRUE(Write("raw/sched/sched_wakeup/filter", "0\n"));
  ASSERT_TRUE(Write("sched_switch/filter", "0\n"));
  ASSERT_TRUE(Write("variables", "!target\n"));
  EXPECT_EQ(M("variables"), "");
}

// A save reads its event whether or not a stream is open, and its records
// reach no stream of a user who did not enable the event.
TEST_F(ControlVariables, ASaveCapturesWithNoStreamOpenAndItsRecordsStayOutOfTheStreams) {
  ASSERT_TRUE(Write("sched_switch/trigger", "save:next=next_pid\n", O_WRONLY | O_APPEND));
  // Declared by the save; a switch may have been captured already.
  EXPECT_TRUE(std::regex_match(M("variables"), std::regex("next( unset|=[0-9]+)\n"))) << M("variables");
  EXPECT_EQ(K("sched/sched_switch/enable"), "0\n") << "the main instance's event stays off";
  EXPECT_EQ(M("sched_switch/enable"), "0\n");
  EXPECT_TRUE(switch_until([&] { return M("variables") != "next unset\n"; })) << M("variables");
  EXPECT_TRUE(std::regex_match(M("variables"), std::regex("next=[0-9]+\n"))) << M("variables");
  // A stream open now gets no sched_switch record while the save goes on capturing.
  ASSERT_TRUE(Write("sched_wakeup/enable", "1\n"));
  stream::Collector text({*m_ / "trace_pipe"}, false);
  ASSERT_TRUE(text.Start());
  switch_until([] { return false; }, 500ms);
  text.Stop();
  std::size_t switches = 0, wakeups = 0;
  for (const auto& l : text.Lines()) {
    switches += l.find(" sched_switch: ") != std::string::npos;
    wakeups += l.find(" sched_wakeup: ") != std::string::npos;
  }
  EXPECT_EQ(switches, 0u);
  EXPECT_GT(wakeups, 0u) << "the stream read nothing at all";
  ASSERT_TRUE(Write("sched_wakeup/enable", "0\n"));
  EXPECT_EQ(M("sched_switch/trigger"), "save:next=next_pid:unlimited\n");
  ASSERT_TRUE(Write("sched_switch/trigger", "!save:next=next_pid\n", O_WRONLY | O_APPEND));
  EXPECT_TRUE(save_instances(m_->instance()).empty());
  ASSERT_TRUE(Write("variables", "!next\n"));
}

// The daemon's threads, by id and by name.
std::map<int, std::string> daemon_threads(pid_t pid) {
  std::map<int, std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& t : list_dir(dir, true)) {
    std::string comm = slurp(dir + "/" + t + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    out[std::atoi(t.c_str())] = comm;
  }
  return out;
}

bool has_thread_named(pid_t pid, const std::string& name) {
  for (const auto& [tid, comm] : daemon_threads(pid))
    if (comm == name) return true;
  return false;
}

// A save with no condition on an event every thread makes (sys_enter) must
// not capture the daemon's own threads: their polls and reads would make the
// records that wake them. The save's instance filters out every thread of
// the daemon, and `variables` never shows one.
TEST_F(ControlVariables, ASaveOnAHotEventLeavesTheDaemonsOwnThreadsOut) {
  EXPECT_FALSE(has_thread_named(m_->pid(), "eventfs-capture")) << "no capture thread before a save is armed";
  ASSERT_TRUE(Write("sys_enter/trigger", "save:sv=common_pid\n", O_WRONLY | O_APPEND));
  EXPECT_TRUE(has_thread_named(m_->pid(), "eventfs-capture"));
  const auto saves = save_instances(m_->instance());
  ASSERT_EQ(saves.size(), 1u);
  const std::string filter_file =
      std::string(kLiveTracefs) + "/instances/" + saves[0] + "/events/raw_syscalls/sys_enter/filter";
  // (A thread the daemon starts meanwhile, a FUSE worker, is added at the next batch.)
  std::string missing;
  EXPECT_TRUE(wait_until(
      [&] {
        const std::string filter = slurp(filter_file);
        missing.clear();
        for (const auto& [tid, comm] : daemon_threads(m_->pid()))
          if (filter.find("common_pid != " + std::to_string(tid)) == std::string::npos)
            missing += " " + std::to_string(tid) + " (" + comm + ")";
        return missing.empty();
      },
      scaled(2s)))
      << "threads not left out:" << missing << "; filter: " << slurp(filter_file);
  std::size_t own = 0, seen = 0;
  for (int i = 0; i < 60; ++i) {
    std::string v = M("variables");
    std::smatch m;
    if (std::regex_match(v, m, std::regex("sv=([0-9]+)\n"))) {
      ++seen;
      own += daemon_threads(m_->pid()).count(std::atoi(m[1].str().c_str()));
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GT(seen, 0u) << "nothing was captured";
  EXPECT_EQ(own, 0u) << "variables showed one of the daemon's threads " << own << " times in " << seen;
  ASSERT_TRUE(Write("sys_enter/trigger", "!save:sv=common_pid\n", O_WRONLY | O_APPEND));
}

// SIGTERM while a save feeds a variable that kernel triggers name (each new
// value rewrites them, and the kernel takes long to remove an enable_event
// trigger): the daemon stops within eventfs(8)'s bounds, removing its
// instance and the save's.
TEST_F(ControlVariables, SigtermWhileCapturesRewriteKernelTriggersEndsInTime) {
  ASSERT_TRUE(Write("sched_wakeup/trigger", "save:b=pid\n", O_WRONLY | O_APPEND));
  ASSERT_TRUE(Write("softirq_entry/trigger", "enable_event:sched_* if vec == b\n", O_WRONLY | O_APPEND));
  const std::string name = m_->instance();
  // Let values come and rewrites run.
  switch_until([] { return false; }, 3s);
  const auto start = std::chrono::steady_clock::now();
  auto st = m_->SignalAndWait(SIGTERM, 20s);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(st.has_value()) << "still running 20 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "status " << *st << "; stderr: " << m_->Stderr();
  // 2 s for open files, 3 s for the instance (eventfs(8), SIGNALS AND SHUTDOWN).
  EXPECT_LT(took, scaled(5s)) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_FALSE(exists(inst_));
  EXPECT_TRUE(save_instances(name).empty());
}

// A daemon killed with a save armed leaves its save's instance; the next
// daemon of the same instance name removes it as it starts.
TEST_F(ControlVariables, AKilledDaemonsSaveInstanceGoesWithTheNextDaemon) {
  MountedEventfs first;
  ASSERT_TRUE(first.Start());
  const std::string name = first.instance();
  ASSERT_TRUE(Accepts(first, "sched_switch/trigger", "save:next=next_pid\n"));
  ASSERT_EQ(save_instances(name).size(), 1u);
  auto st = first.SignalAndWait(SIGKILL);
  ASSERT_TRUE(st.has_value());
  force_unmount(first.path());
  ASSERT_EQ(save_instances(name).size(), 1u) << "killed, it could remove nothing";
  MountOptions o;
  o.instance_name = name;
  o.timeout = 30s;  // reclaiming walks every event of the instance
  MountedEventfs second(o);
  ASSERT_TRUE(second.Start());
  EXPECT_TRUE(save_instances(name).empty());
  EXPECT_EQ(slurp(second / "variables"), "");
  second.Stop();
  EXPECT_FALSE(exists(instance_dir(name)));
}

// The 2013 proposal: triggers on sys_enter_read enable the page-cache events
// and capture the reader's pid; sys_exit_read disables them for that pid.
// A reader child (its own comm) reads a file evicted from the page cache;
// its page-cache insertions come out of trace_pipe.
TEST_F(ControlVariables, TheProposalsReadScenarioEndToEnd) {
  const std::string enter = "raw/syscalls/sys_enter_read/trigger", exit = "raw/syscalls/sys_exit_read/trigger";
  if (!exists(*m_ / enter) || !exists(*m_ / "page_cache_add")) GTEST_SKIP() << "no sys_enter_read or filemap events";
  // The proposal's lines, verbatim.
  ASSERT_TRUE(Write(enter,
                    "enable_event:filemap:mm_filemap_add_to_page_cache "
                    "enable_event:filemap:mm_filemap_delete_from_page_cache\n"));
  ASSERT_TRUE(Write(enter, "enable_event:block:*\n", O_WRONLY | O_APPEND));
  ASSERT_TRUE(Write(enter, "save:mysaved_pid=common_pid if comm == \"efs_reader\"\n", O_WRONLY | O_APPEND));
  EXPECT_EQ(M("variables"), "mysaved_pid unset\n");
  ASSERT_TRUE(Write(exit, "disable_event:block:* if common_pid == mysaved_pid\n", O_WRONLY | O_APPEND));
  ASSERT_TRUE(Write(exit, "disable_event:filemap:mm_filemap_add_to_page_cache if common_pid == mysaved_pid\n",
                    O_WRONLY | O_APPEND));
  EXPECT_NE(K("syscalls/sys_exit_read/trigger").find("if common_pid < 0"), std::string::npos)
      << K("syscalls/sys_exit_read/trigger");

  // A file of 16 pages, out of the page cache.
  const std::string file = catalog_dir_ / "data";
  ASSERT_TRUE(write_text_file(file, std::string(16 * 4096, 'x')));
  {
    int fd = ::open(file.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);

  stream::Collector text({*m_ / "trace_pipe"}, false);
  ASSERT_TRUE(text.Start());
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_NAME, "efs_reader");
    char c;
    // This read (of the pipe) is the one whose sys_enter_read is captured.
    if (::read(go[0], &c, 1) != 1) _exit(2);
    if (::read(go[0], &c, 1) != 1) _exit(3);
    int fd = ::open(file.c_str(), O_RDONLY);
    static char buf[16 * 4096];
    ssize_t n = fd < 0 ? -1 : ::read(fd, buf, sizeof buf);
    _exit(n == static_cast<ssize_t>(sizeof buf) ? 0 : 4);
  }
  ASSERT_GT(child, 0);
  ::close(go[0]);
  ASSERT_EQ(::write(go[1], "a", 1), 1);
  const std::string captured = "mysaved_pid=" + std::to_string(child) + "\n";
  EXPECT_TRUE(wait_until([&] { return M("variables") == captured; }, 5s)) << M("variables");
  const std::string rewritten = "if common_pid == " + std::to_string(child);
  EXPECT_TRUE(wait_until([&] { return K("syscalls/sys_exit_read/trigger").find(rewritten) != std::string::npos; }, 5s))
      << K("syscalls/sys_exit_read/trigger");
  // The mount shows the variable's name, never the number.
  const std::string shown = M(exit);
  EXPECT_NE(shown.find("disable_event:block:"), std::string::npos) << shown;
  EXPECT_NE(shown.find("if common_pid == mysaved_pid"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(std::to_string(child)), std::string::npos) << shown;
  EXPECT_NE(M(enter).find("save:mysaved_pid=common_pid:unlimited if comm == \"efs_reader\""), std::string::npos)
      << M(enter);

  ASSERT_EQ(::write(go[1], "b", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The child's page-cache insertions of that file, in trace_pipe.
  const std::regex line("(^|[ -])" + std::to_string(child) + " \\[[0-9]+\\] [0-9.]+: page_cache_add: ino=(0x)?([0-9a-f]+)");
  auto from_the_read = [&] {
    for (const auto& l : text.Lines()) {
      std::smatch mm;
      if (std::regex_search(l, mm, line) && std::stoull(mm[3].str(), nullptr, mm[2].matched ? 16 : 10) == st.st_ino)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(wait_until(from_the_read, 5s)) << "no page_cache_add of ino " << st.st_ino << " by " << child << "; "
                                             << text.LineCount() << " lines, e.g.:\n"
                                             << (text.Lines().empty() ? "" : text.Lines().front());
  text.Stop();

  // Clean up in the order the kernel needs; the save goes with its command.
  ASSERT_TRUE(Write(enter, "!save:mysaved_pid=common_pid\n", O_WRONLY | O_APPEND));
  EXPECT_TRUE(save_instances(m_->instance()).empty());
}

}  // namespace
}  // namespace eventfs_it
