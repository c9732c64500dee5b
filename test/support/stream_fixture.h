// The fixture of the stream tests (the top-level instance is left as it was), and
// what several of them share: stream paths, event ids, the marker cases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/stream_util.h"
#include "support/stream_reading.h"

namespace eventfs_it::stream {

constexpr const char* kTopSchedSwitchEnable = "/sys/kernel/tracing/events/sched/sched_switch/enable";
constexpr const char* kTopBufferSize = "/sys/kernel/tracing/buffer_size_kb";

class StreamTest : public ::testing::Test {
 protected:
  // Skips without a live tracefs; notes the top-level instance's sched_switch
  // enable and buffer size.
  void SetUp() override;
  // Expects both as SetUp() found them.
  void TearDown() override;

  // The CPU the tests pin their writers and ping-pong threads to.
  static int test_cpu();

 private:
  bool checked_ = false;
  std::string top_enable_, top_buffer_;
};

enum class Via { Text, Raw };

void PrintTo(Via v, std::ostream* os);

std::vector<std::string> stream_paths(const MountedEventfs& m, Via via, int cpus);

unsigned event_id(const MountedEventfs& m, const std::string& event);

// ---------------------------------------------------------------------------
// 1. sched_switch against an independent reader of a second instance.

struct MarkerCase {
  Via via;
  const char* reader;
};

void PrintTo(const MarkerCase& c, std::ostream* os);

constexpr const char* kMarkerFormat = "\tarray:text\ttype:char\tsize:8\tcount:64\talign:1\tsigned:1;\n";

// A marker's text as the stream shows it: the kernel ends a trace_marker
// record with a newline, which the text stream prints as '?'.
std::string strip_marker_end(std::string s, char end);

// What a collector read of `marker` records (stable id `id`) and lost marks
// of CPU `cpu`, from trace_pipe lines or trace_pipe_raw records.
struct MarkerStream {
  std::vector<int> seq;  // marker numbers, in stream order
  std::size_t marks = 0, unknown_marks = 0;
  std::uint64_t lost_sum = 0;
  std::vector<std::string> odd;  // anything else (the first 10)
};

MarkerStream parse_marker_stream(Collector& col, Via via, unsigned id, int cpu);

}  // namespace eventfs_it::stream
