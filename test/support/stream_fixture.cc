// The fixture of the stream tests (the top-level instance is left as it was), and
#include "support/stream_fixture.h"
#include "support/markers.h"

namespace eventfs_it::stream {

void PrintTo(Via v, std::ostream* os) { *os << (v == Via::Text ? "trace_pipe" : "per_cpu/cpuN/trace_pipe_raw"); }

std::vector<std::string> stream_paths(const MountedEventfs& m, Via via, int cpus) {
  if (via == Via::Text) return {m / "trace_pipe"};
  std::vector<std::string> out;
  for (int c = 0; c < cpus; ++c) out.push_back(m / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw"));
  return out;
}

unsigned event_id(const MountedEventfs& m, const std::string& event) {
  return static_cast<unsigned>(std::strtoul(slurp(m / (event + "/id")).c_str(), nullptr, 10));
}

void PrintTo(const MarkerCase& c, std::ostream* os) {
  PrintTo(c.via, os);
  *os << " with -o reader=" << c.reader;
}

std::string strip_marker_end(std::string s, char end) {
  if (!s.empty() && s.back() == end) s.pop_back();
  return s;
}

MarkerStream parse_marker_stream(Collector& col, Via via, unsigned id, int cpu) {
  MarkerStream out;
  auto oddity = [&](const std::string& what) {
    if (out.odd.size() < 10) out.odd.push_back(what);
  };
  auto marker = [&](const std::string& text, char end) {
    int n = marker_number(strip_marker_end(text, end));
    if (n >= 0)
      out.seq.push_back(n);
    else
      oddity("not a marker: " + text);
  };
  if (via == Via::Text) {
    static const std::regex lost_re("^CPU:(\\d+) \\[LOST (?:(\\d+) )?EVENTS\\]$");
    static const std::regex marker_re("^.*--?\\d+ \\[\\d{3}\\] \\d+\\.\\d{6}: marker: text=(.*)$");
    for (const auto& line : col.Lines()) {
      std::smatch mm;
      if (std::regex_match(line, mm, lost_re)) {
        ++out.marks;
        if (std::stoi(mm[1]) != cpu) oddity("lost mark of another CPU: " + line);
        if (mm[2].matched)
          out.lost_sum += std::stoull(mm[2]);
        else
          ++out.unknown_marks;
      } else if (std::regex_match(line, mm, marker_re)) {
        marker(mm[1], '?');
      } else {
        oddity("unexpected line: " + line);
      }
    }
    return out;
  }
  for (const auto& r : col.Records()) {
    if (r.header.id == EVENTFS_ID_LOST) {
      ++out.marks;
      eventfs_lost l;
      std::memcpy(&l, r.payload.data(), sizeof l);
      if (static_cast<int>(l.cpu) != cpu) oddity("lost record of cpu " + std::to_string(l.cpu));
      out.lost_sum += l.count;
      if (l.flags & EVENTFS_LOST_COUNT_UNKNOWN) ++out.unknown_marks;
    } else if (r.header.id == id) {
      marker(std::string(r.payload.data(), strnlen(r.payload.data(), std::min<std::size_t>(64, r.payload.size()))), '\n');
    } else {
      oddity("record of id " + std::to_string(r.header.id));
    }
  }
  return out;
}

void StreamTest::SetUp() {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  top_enable_ = slurp(kTopSchedSwitchEnable);
  top_buffer_ = slurp(kTopBufferSize);
  checked_ = true;
}

void StreamTest::TearDown() {
  if (!checked_) return;
  EXPECT_EQ(slurp(kTopSchedSwitchEnable), top_enable_) << "the top-level instance was changed";
  const std::string top_buffer = slurp(kTopBufferSize);
  EXPECT_TRUE(TopLevelRingsAsBefore(top_buffer_, top_buffer))
      << "the top-level instance's rings were changed: buffer_size_kb was " << top_buffer_ << ", is " << top_buffer;
}

int StreamTest::test_cpu() {
  auto cpus = allowed_cpus();
  return cpus.empty() ? 0 : cpus.back();
}

}  // namespace eventfs_it::stream
