// The mount describes its own framing: a decoder that reads only `header`,
// `types/` and the events' `format` files (support/layout_decoder, no
// record.h) gets from per_cpu/cpuN/trace_pipe_raw the values trace_pipe
// shows, the task state by the name types/task_state gives its value. Two mounts
// record the same switches of two known threads: one read as text, the
// other decoded from the layouts.

#include <fcntl.h>
#include <unistd.h>

#include <set>

#include "support/layout_decoder.h"
#include "support/stream_fixture.h"
#include "support/stream_util.h"
#include "support/stream_reading.h"
#include "support/sched_switch.h"

namespace eventfs_it {
namespace {

using namespace stream;

class StreamHeader : public StreamTest {};

TEST_F(StreamHeader, ADecoderReadingOnlyHeaderTypesAndFormatsGetsTrace_pipesValues) {
  MountedEventfs text_mount, raw_mount;
  ASSERT_TRUE(text_mount.Start());
  ASSERT_TRUE(raw_mount.Start());
  LayoutDecoder decoder;
  std::string why;
  ASSERT_TRUE(decoder.load(raw_mount.path(), {"sched_switch"}, why)) << why;
  const int cpus = mount_cpus(raw_mount.path());
  ASSERT_GT(cpus, 0);

  Collector text({text_mount / "trace_pipe"}, false);
  ASSERT_TRUE(text.Start());
  std::vector<int> fds;
  for (int c = 0; c < cpus; ++c) {
    int fd = ::open((raw_mount / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw")).c_str(),
                    O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  ASSERT_TRUE(Writes(text_mount / "sched_switch/enable", "1", text_mount / "error_log"));
  ASSERT_TRUE(Writes(raw_mount / "sched_switch/enable", "1", raw_mount / "error_log"));
  PingPongResult pp = ping_pong(100, test_cpu());
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Writes(raw_mount / "sched_switch/enable", "0", raw_mount / "error_log"));
  ASSERT_TRUE(Writes(text_mount / "sched_switch/enable", "0", text_mount / "error_log"));
  ASSERT_EQ(pp.rounds_done, 100);
  EXPECT_TRUE(text.WaitQuiet(500ms, 10s));
  text.Stop();

  const std::string ping = std::to_string(pp.ping), pong = std::to_string(pp.pong);
  auto ours = [&](const std::string& l) {
    return l.find("prev_pid=" + ping + " ") != std::string::npos || l.find("prev_pid=" + pong + " ") != std::string::npos;
  };
  std::multiset<std::string> decoded, shown;
  for (int c = 0; c < cpus; ++c) {
    std::string bytes;
    std::vector<char> buf(1 << 16);
    for (;;) {
      ssize_t n = ::read(fds[static_cast<std::size_t>(c)], buf.data(), buf.size());
      if (n <= 0) break;
      bytes.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fds[static_cast<std::size_t>(c)]);
    std::vector<std::string> lines;
    ASSERT_TRUE(decoder.decode(bytes, c, lines, why)) << why;
    for (const auto& l : lines)
      if (ours(l)) decoded.insert(l);
  }
  // trace_pipe's lines without the task name and the time stamp.
  const std::regex head("^.*-(-?\\d+) (\\[\\d{3}\\]) \\d+\\.\\d{6}: (sched_switch:.*)$");
  for (const auto& l : text.Lines()) {
    std::smatch m;
    if (std::regex_match(l, m, head) && ours(l)) shown.insert(m[1].str() + " " + m[2].str() + " " + m[3].str());
  }
  EXPECT_EQ(decoder.lost_records, 0u);
  EXPECT_GT(decoded.size(), 100u) << "ping " << ping << " pong " << pong;
  EXPECT_TRUE(decoded == shown) << decoded.size() << " decoded, " << shown.size() << " in trace_pipe; e.g. decoded: "
                                << (decoded.empty() ? "" : *decoded.begin())
                                << "\nshown: " << (shown.empty() ? "" : *shown.begin());
}

}  // namespace
}  // namespace eventfs_it
