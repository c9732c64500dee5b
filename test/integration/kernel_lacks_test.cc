// What eventfs does where the running kernel lacks something it uses
// (eventfs(8), KERNELS): a trigger command the kernel does not list is
// refused with the kernel's list; the instance's sub-buffer size is set
// where the kernel has buffer_subbuf_size_kb (Linux 6.8) and left alone
// before; -o reader=auto reads the rings with read(2) on every kernel, and
// stats says so. Run on every kernel of the matrix.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "control/trigger.h"
#include "support/control_fixture.h"
#include "support/kernel_features.h"
#include "support/markers.h"
#include "support/sched_switch.h"
#include "support/stream_fixture.h"
#include "support/stream_reading.h"

namespace eventfs_it {
namespace {

using namespace control;

class KernelLacks : public ControlTest {};

TEST_F(KernelLacks, ATriggerCommandTheKernelDoesNotListIsRefusedWithTheKernelsList) {
  const std::string kernel_file = std::string(kLiveTracefs) + "/events/sched/sched_switch/trigger";
  const std::vector<std::string> available = eventfs::available_triggers_from(slurp(kernel_file));
  ASSERT_FALSE(available.empty()) << slurp(kernel_file);
  std::string list;
  for (const auto& a : available) list += (list.empty() ? "" : " ") + a;
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = std::string(kLiveTracefs) + "/instances/" + m.instance() + "/events/sched/sched_switch/trigger";
  const std::string before = slurp(inst);
  std::vector<std::string> lacked;
  for (const auto& command : eventfs::known_trigger_commands()) {
    if (std::find(available.begin(), available.end(), command) != available.end()) continue;
    lacked.push_back(command);
    SCOPED_TRACE(command);
    ASSERT_EQ(write_once(m / "error_log", "", O_WRONLY | O_TRUNC), 0);
    EXPECT_EQ(write_once(m / "sched_switch/trigger", command, O_WRONLY | O_APPEND), EINVAL);
    const std::string log = slurp(m / "error_log");
    EXPECT_NE(log.find("Command '" + command + "' is not available on this kernel (available: "), std::string::npos)
        << log;
    // The kernel's own list, whatever its separators in the message.
    for (const auto& a : available) EXPECT_NE(log.find(a), std::string::npos) << a << " not in " << log;
    EXPECT_EQ(slurp(inst), before) << "the instance's trigger changed";
  }
  // Which commands this kernel lacks (told, not judged: it depends on how it
  // was configured; Debian's 5.10, 6.1 and 6.12 list snapshot, this
  // project's 6.18 host not).
  std::string lacks;
  for (const auto& l : lacked) lacks += (lacks.empty() ? "" : " ") + l;
  RecordProperty("kernel_lacks", lacks.empty() ? "-" : lacks);
  std::printf("  [kernel] available triggers: %s; lacks: %s\n", list.c_str(), lacks.empty() ? "-" : lacks.c_str());
}

class KernelLacksStreams : public stream::StreamTest {};

// eventfs sets its instance's buffer_subbuf_size_kb to 64 where the kernel
// has the file (6.8) and takes the size, and a reader=auto mount reads the rings with read(2),
// also where the kernel could map them (6.10): stats says so, and the
// records come.
TEST_F(KernelLacksStreams, SubbufSizeWhereTheKernelHasItAndAutoReads) {
  stream::MarkerMount mm;
  MountedEventfs& m = mm.m;
  ASSERT_TRUE(m.Start());
  const std::string inst = stream::instance_dir(m.instance());
  if (kernel_has_subbuf_size()) {
    // Whether the kernel lets an instance's sub-buffers change, asked of an
    // instance of the test's own (a kernel may refuse it: EPERM).
    stream::RefInstance ref;
    ASSERT_EQ(ref.error(), "");
    const std::string kernel_size = slurp(ref / "buffer_subbuf_size_kb");
    if (write_once(ref / "buffer_subbuf_size_kb", "64", O_WRONLY | O_TRUNC) == 0) {
      EXPECT_EQ(slurp(inst + "/buffer_subbuf_size_kb"), "64\n");
    } else {
      EXPECT_EQ(slurp(inst + "/buffer_subbuf_size_kb"), kernel_size);
      std::string kb = kernel_size;
      while (!kb.empty() && kb.back() == '\n') kb.pop_back();
      std::printf("  [kernel] refuses buffer_subbuf_size_kb writes: sub-buffers of %s KiB\n", kb.c_str());
    }
  } else {
    EXPECT_FALSE(exists(inst + "/buffer_subbuf_size_kb")) << "a kernel before 6.8 has buffer_subbuf_size_kb";
  }
  const int cpu = test_cpu();
  stream::Collector col({m / ("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw")}, true);
  ASSERT_TRUE(col.Start());
  stream::MarkerWriteResult w = stream::write_markers(inst + "/trace_marker", cpu, 20);
  ASSERT_EQ(w.error, "");
  EXPECT_TRUE(col.WaitFor([&] { return col.RecordCount() >= 20; }, 5s)) << col.RecordCount();
  const std::string stats = slurp(m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats"));
  col.Stop();
  EXPECT_EQ(stream::parse_stats(stats)["reader"], reader_in_use("auto")) << stats;
  EXPECT_EQ(slurp(m / "error_log"), "");
}

}  // namespace
}  // namespace eventfs_it
