// The stream load of the fault tests: marker writers, stream readers, and the
// rounds of load a signal lands in.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/fault_control_load.h"
#include "support/stream_util.h"
#include "support/children.h"
#include "support/stream_reading.h"
#include "support/markers.h"

namespace eventfs_it::fault {

class MarkerWriter {
 public:
  // Markers m-<n> for n = first, first+1, ... (wrapping below `end`), in
  // bursts of `burst` with `pause` between them; on `cpu` if >= 0.
  MarkerWriter(std::string trace_marker, int first, int end, int burst, std::chrono::microseconds pause, int cpu = -1);
  ~MarkerWriter() { Stop(); }
  // Ends the writing thread and joins it.
  void Stop();
  long written() const { return written_; }
  const std::string& error() const { return error_; }  // after Stop()

 private:
  std::string path_;
  std::atomic<bool> stop_{false};
  std::atomic<long> written_{0};
  std::string error_;
  std::thread thread_;
};

// Writes markers m-<lo> .. m-<hi-1> once each from `cpu`; "" or the error.
std::string write_marker_range(const std::string& trace_marker, int cpu, int lo, int hi);

// The marker numbers a collector got within [lo, hi), in the order it got them.
std::vector<int> markers_in_range(Collector& col, bool binary, unsigned id, int lo, int hi);

std::string describe_sequence(const std::vector<int>& got, int lo, int hi);

// Every CPU's ring closed (no stream open), as per_cpu/cpuN/stats says.
bool every_ring_closed(const MountedEventfs& m, int cpus);

std::string ring_modes(const MountedEventfs& m, int cpus);

// ---------------------------------------------------------------------------
// 4. Stream readers killed mid-read.

struct StreamReader {
  std::string path;
  int fd = -1;
  std::atomic<bool> done{false};
  long reads = 0, bytes = 0;
  ssize_t last_n = 0;
  int last_err = 0;
  std::int64_t last_start = 0, last_end = 0;
};

std::shared_ptr<StreamReader> start_reader(const std::string& path);

// Everything a round puts on a daemon: control workers (two threads and a
// process), reader threads on trace_pipe and every per_cpu raw stream, two
// cat processes, and a trace_marker writer.
class RoundLoad {
 public:
  RoundLoad(MountedEventfs& m, unsigned seed) : m_(m), seed_(seed) {}
  ~RoundLoad() { Finish(); }

  // Starts it all: the held trigger, the shared descriptors, a worker process,
  // the marker writer, the reader threads and cats, two worker threads; then Go.
  ::testing::AssertionResult Start();

  // After the signal: no more markers or control operations.
  void Quiet();

  // Waits (bounded) for every reader thread and cat to end; the ones that did not.
  std::vector<std::string> WaitReaders(std::chrono::milliseconds limit);

  // Waits for the control workers; the stuck ones.
  std::vector<std::string> WaitWorkers(std::chrono::milliseconds limit);

  // Ends whatever is left (the daemon must be gone or going for that).
  void Finish();

  const std::vector<std::shared_ptr<StreamReader>>& readers() const { return readers_; }
  Children& kids() { return kids_; }
  const Workers* workers() const { return workers_.get(); }
  long markers_written() const { return markers_ ? markers_->written() : 0; }

 private:
  MountedEventfs& m_;
  unsigned seed_;
  std::string inst_;
  Env env_;
  SharedBoard board_;
  std::unique_ptr<Workers> workers_;
  std::unique_ptr<MarkerWriter> markers_;
  std::vector<std::shared_ptr<StreamReader>> readers_;
  Children kids_;
};

struct SignalTotals {
  long rounds = 0, signals = 0, reader_reads = 0, reader_bytes = 0, streams = 0, markers = 0;
  Totals control;
  std::map<std::string, long> endings;  // how the readers' last reads ended
  // Counts a round's readers and cats, how the readers' last reads ended, and its markers.
  void add_readers(RoundLoad& load);
  // "end of file 3, data 1": the endings and their counts.
  std::string endings_text() const;
};

}  // namespace eventfs_it::fault
