// Cross-kernel identity: what a mount promises to keep stable (every
// event's format and id, header, types/) is byte for byte the same on every
// kernel, and one deterministic workload recorded on each kernel, decoded by
// one decoder from one kernel's mount files, gives the same values.
//
// In each VM of the kernel matrix (scripts/kernels.sh, whose
// $EVENTFS_RESULTS is a share the host reads), CrossKernelDump writes the
// mount's stable files and the workload's binary streams under
// $EVENTFS_RESULTS/identity. On the host, CrossKernel compares them with
// the host's own mount and workload, for every kernel directory under
// $EVENTFS_KERNEL_RESULTS (scripts/run-tests.sh: build/kernels).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "support/layout_decoder.h"
#include "support/markers.h"
#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/temp_dirs.h"
#include "support/time_scale.h"

namespace eventfs_it {
namespace {

using namespace stream;

constexpr int kMarkers = 40;
constexpr int kRounds = 60;

// The stable files of a mount, by path relative to it: header, types/*, and
// the format and id of every available event.
std::map<std::string, std::string> stable_files(const MountedEventfs& m) {
  std::map<std::string, std::string> files;
  files["header"] = slurp(m / "header");
  for (const auto& t : list_dir(m / "types")) files["types/" + t] = slurp(m / ("types/" + t));
  for (const auto& ev : split_lines(slurp(m / "available_events"))) {
    if (ev.empty()) continue;
    files[ev + "/format"] = slurp(m / (ev + "/format"));
    files[ev + "/id"] = slurp(m / (ev + "/id"));
  }
  return files;
}

bool make_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/')
      if (::mkdir(path.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST) return false;
  return true;
}

// The workload, on a mount with `marker`: kMarkers markers m-000000... from
// one thread, then kRounds hand-overs of two threads named efs-ping and
// efs-pong, both pinned to one CPU, read from every CPU's trace_pipe_raw.
// Writes cpuN.bin and `roles` ("marker TID", "ping TID", "pong TID") to `dir`.
::testing::AssertionResult record_workload(const std::string& dir) {
  MarkerMount mm;
  MountedEventfs& m = mm.m;
  if (auto r = m.Start(); !r) return r;
  const int cpus = mount_cpus(m.path());
  if (cpus <= 0) return ::testing::AssertionFailure() << "no per_cpu/ in the mount";
  std::vector<int> fds;
  for (int c = 0; c < cpus; ++c)
    fds.push_back(::open((m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw")).c_str(),
                         O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  const int cpu = allowed_cpus().empty() ? 0 : allowed_cpus().back();
  if (auto r = Writes(m / "sched_switch/enable", "1", m / "error_log"); !r) return r;
  MarkerWriteResult w = write_markers(instance_dir(m.instance()) + "/trace_marker", cpu, kMarkers);
  PingPongResult pp = ping_pong(kRounds, cpu);
  std::this_thread::sleep_for(scaled(50ms));
  if (auto r = Writes(m / "sched_switch/enable", "0", m / "error_log"); !r) return r;
  if (!w.error.empty() || w.written != kMarkers) return ::testing::AssertionFailure() << "markers: " << w.error;
  if (pp.rounds_done != kRounds) return ::testing::AssertionFailure() << pp.rounds_done << " ping-pong rounds";
  if (!make_dirs(dir)) return ::testing::AssertionFailure() << "mkdir " << dir << ": " << std::strerror(errno);
  for (int c = 0; c < cpus; ++c) {
    std::string bytes;
    std::vector<char> buf(1 << 16);
    // Whatever is still on its way through the daemon's queues comes within
    // a few quiet reads.
    for (int quiet = 0; fds[static_cast<std::size_t>(c)] >= 0 && quiet < 25;) {
      ssize_t n = ::read(fds[static_cast<std::size_t>(c)], buf.data(), buf.size());
      if (n > 0) {
        bytes.append(buf.data(), static_cast<std::size_t>(n));
        quiet = 0;
      } else {
        ++quiet;
        std::this_thread::sleep_for(scaled(40ms));
      }
    }
    if (fds[static_cast<std::size_t>(c)] >= 0) ::close(fds[static_cast<std::size_t>(c)]);
    if (!write_text_file(dir + "/cpu" + std::to_string(c) + ".bin", bytes))
      return ::testing::AssertionFailure() << "cannot write " << dir;
  }
  write_text_file(dir + "/roles", "marker " + std::to_string(w.tid) + "\nping " + std::to_string(pp.ping) +
                                      "\npong " + std::to_string(pp.pong) + "\n");
  return ::testing::AssertionSuccess();
}

// The values of a recorded workload, decoded by `decoder` with each task
// id of the workload replaced by its role: the markers in order, and the
// distinct switches from one ping-pong thread to the other.
struct Values {
  std::vector<std::string> markers;
  std::set<std::string> switches;
  std::size_t hand_overs = 0;
};

::testing::AssertionResult decode_workload(const LayoutDecoder& decoder, const std::string& dir, Values& out) {
  std::map<std::string, std::string> roles;  // tid -> role
  for (const auto& l : split_lines(slurp(dir + "/roles"))) {
    auto sp = l.find(' ');
    if (sp != std::string::npos) roles[l.substr(sp + 1)] = "<" + l.substr(0, sp) + ">";
  }
  if (roles.size() != 3) return ::testing::AssertionFailure() << dir << "/roles: " << slurp(dir + "/roles");
  const std::regex tid("(^|[ =])(-?\\d+)(?=[ \\[]|$)");
  for (int c = 0; exists(dir + "/cpu" + std::to_string(c) + ".bin"); ++c) {
    std::vector<std::string> lines;
    std::string why;
    if (!decoder.decode(slurp(dir + "/cpu" + std::to_string(c) + ".bin"), c, lines, why))
      return ::testing::AssertionFailure() << dir << ", cpu " << c << ": " << why;
    for (auto l : lines) {
      // "<pid> [<cpu>] <event>: ..." without the CPU, task ids as roles.
      auto cpu_at = l.find(" [");
      auto cpu_end = l.find("] ", cpu_at == std::string::npos ? 0 : cpu_at);
      if (cpu_at == std::string::npos || cpu_end == std::string::npos) continue;
      l.erase(cpu_at, cpu_end + 1 - cpu_at);
      std::string named;
      std::size_t ours = 0;
      std::sregex_iterator it(l.begin(), l.end(), tid), end;
      std::size_t last = 0;
      for (; it != end; ++it) {
        const auto& mt = *it;
        named += l.substr(last, static_cast<std::size_t>(mt.position(2)) - last);
        auto r = roles.find(mt[2].str());
        named += r != roles.end() ? r->second : mt[2].str();
        if (r != roles.end()) ++ours;
        last = static_cast<std::size_t>(mt.position(2) + mt.length(2));
      }
      named += l.substr(last);
      if (named.rfind("<marker> marker: ", 0) == 0) out.markers.push_back(named);
      // The task, prev_pid and next_pid all ping-pong threads, by the names
      // they give themselves (the first switch to one may come before it
      // has). Whether the thread handing over sleeps on its pipe or is
      // preempted by the one it woke is the scheduler's choice, which varies
      // with the kernel and the timing: prev_state is left out.
      if (auto st = named.find(" prev_state="); st != std::string::npos) {
        auto end = named.find(' ', st + 1);
        named.erase(st, end == std::string::npos ? std::string::npos : end - st);
      }
      if (named.find(" sched_switch: ") != std::string::npos && ours >= 3 &&
          named.find("prev_comm=efs-p") != std::string::npos && named.find("next_comm=efs-p") != std::string::npos &&
          named.find("prev_pid=<marker>") == std::string::npos && named.find("next_pid=<marker>") == std::string::npos) {
        out.switches.insert(named);
        ++out.hand_overs;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

class CrossKernelDump : public StreamTest {};

// In a VM of the kernel matrix: the stable files and the workload, for the
// host to compare (CrossKernel below).
TEST_F(CrossKernelDump, WritesTheStableFilesAndARecordedWorkloadForTheHost) {
  const char* results = std::getenv("EVENTFS_RESULTS");
  if (results == nullptr || *results == '\0') GTEST_SKIP() << "runs in the kernel matrix's VMs (scripts/kernels.sh)";
  const std::string out = std::string(results) + "/identity";
  {
    MountedEventfs m;
    ASSERT_TRUE(m.Start());
    auto files = stable_files(m);
    ASSERT_GT(files.size(), 10u);
    for (const auto& [rel, text] : files) {
      const std::string path = out + "/files/" + rel;
      ASSERT_TRUE(make_dirs(path.substr(0, path.rfind('/')))) << path;
      ASSERT_TRUE(write_text_file(path, text)) << path;
    }
  }
  ASSERT_TRUE(record_workload(out + "/workload"));
}

class CrossKernel : public StreamTest {};

// On the host, after the matrix: each kernel's files and values are the
// host kernel's.
TEST_F(CrossKernel, StableFilesAndAWorkloadsValuesAreTheSameOnEveryKernel) {
  const char* results = std::getenv("EVENTFS_KERNEL_RESULTS");
  if (results == nullptr || *results == '\0')
    GTEST_SKIP() << "runs after the kernel matrix, on its results (EVENTFS_KERNEL_RESULTS, see scripts/run-tests.sh)";
  std::vector<std::string> kernels;
  for (const auto& k : list_dir(results, true))
    if (exists(std::string(results) + "/" + k + "/identity/files/header")) kernels.push_back(k);
  ASSERT_FALSE(kernels.empty()) << "no kernel of " << results << " wrote its stable files";
  RecordProperty("kernels", join(kernels, ","));

  TempDir here;
  ASSERT_TRUE(record_workload(here / "workload"));
  // One decoder, from this (the host's) kernel's mount files.
  MarkerMount mm;
  ASSERT_TRUE(mm.m.Start());
  const auto mine = stable_files(mm.m);
  LayoutDecoder decoder;
  std::string why;
  ASSERT_TRUE(decoder.load(mm.m.path(), {"marker", "sched_switch"}, why)) << why;
  Values want;
  ASSERT_TRUE(decode_workload(decoder, here / "workload", want));
  ASSERT_EQ(want.markers.size(), static_cast<std::size_t>(kMarkers)) << join(want.markers);
  // (Each round has two hand-overs; on a busy machine other tasks run in
  // between some of them.)
  ASSERT_GE(want.hand_overs, static_cast<std::size_t>(kRounds / 2));
  // (The kernel ends a marker with a newline, which is shown as '?'.)
  for (int i = 0; i < kMarkers; ++i) EXPECT_EQ(want.markers[i], "<marker> marker: text=" + marker_text(i) + "?");
  ASSERT_EQ(want.switches.size(), 2u) << want.hand_overs << " hand-overs: "
                                      << join({want.switches.begin(), want.switches.end()});

  for (const auto& k : kernels) {
    SCOPED_TRACE("kernel " + k);
    const std::string dir = std::string(results) + "/" + k + "/identity";
    // The host's mount has `marker` (its catalog), the dump's default mount not.
    std::set<std::string> theirs_only, mine_only;
    std::size_t same = 0;
    std::map<std::string, std::string> theirs;
    std::vector<std::string> stack = {""};
    while (!stack.empty()) {
      std::string rel = stack.back();
      stack.pop_back();
      const std::string at = dir + "/files" + (rel.empty() ? "" : "/" + rel);
      for (const auto& e : list_dir(at)) {
        const std::string r = rel.empty() ? e : rel + "/" + e;
        struct stat st {};
        if (::stat((dir + "/files/" + r).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
          stack.push_back(r);
        else
          theirs[r] = slurp(dir + "/files/" + r);
      }
    }
    for (const auto& [rel, text] : theirs) {
      auto it = mine.find(rel);
      if (it == mine.end()) {
        theirs_only.insert(rel);
        continue;
      }
      EXPECT_EQ(text, it->second) << rel << " differs from the host kernel's";
      ++same;
    }
    for (const auto& [rel, text] : mine)
      if (!theirs.count(rel) && rel.rfind("marker/", 0) != 0) mine_only.insert(rel);
    RecordProperty("identical_files_" + k, std::to_string(same));
    // An event a kernel cannot supply is not available there (its reason in
    // unavailable_events): the files of the others are compared.
    EXPECT_GE(same, theirs.size() * 9 / 10) << "fewer than 9 in 10 of " << k << "'s stable files are the host's";
    EXPECT_TRUE(theirs_only.empty()) << "only on " << k << ": " << join({theirs_only.begin(), theirs_only.end()}, " ");
    if (!mine_only.empty())
      std::printf("  [identity] %s lacks %zu stable files of the host's: %s\n", k.c_str(), mine_only.size(),
                  join({mine_only.begin(), mine_only.end()}, " ").c_str());

    Values got;
    ASSERT_TRUE(decode_workload(decoder, dir + "/workload", got));
    EXPECT_EQ(got.markers, want.markers);
    EXPECT_EQ(got.switches, want.switches) << join({got.switches.begin(), got.switches.end()});
    EXPECT_GE(got.hand_overs, static_cast<std::size_t>(kRounds / 2));
  }
}

}  // namespace
}  // namespace eventfs_it
