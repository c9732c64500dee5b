// The stream load of the fault tests: marker writers, stream readers, and the
// rounds of load a signal lands in.
#pragma once

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
  MarkerWriter(std::string trace_marker, int first, int end, int burst, std::chrono::microseconds pause, int cpu = -1)
      : path_(std::move(trace_marker)) {
    thread_ = std::thread([this, first, end, burst, pause, cpu] {
      if (cpu >= 0) pin_current_thread(cpu);
      int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) {
        error_ = "open " + path_ + ": " + std::strerror(errno);
        return;
      }
      for (int n = first; !stop_;) {
        for (int i = 0; i < burst && !stop_; ++i) {
          std::string t = marker_text(n);
          if (::write(fd, t.data(), t.size()) != static_cast<ssize_t>(t.size())) {
            error_ = "write " + path_ + ": " + std::strerror(errno);
            stop_ = true;
            break;
          }
          ++written_;
          n = n + 1 < end ? n + 1 : first;
        }
        std::this_thread::sleep_for(pause);
      }
      ::close(fd);
    });
  }
  ~MarkerWriter() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
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

  ::testing::AssertionResult Start() {
    inst_ = instance_dir(m_.instance());
    env_ = make_env(m_.path(), read_header(inst_));
    if (int e = write_once(m_ / env_.held.rel, env_.held.add + "\n"))
      return ::testing::AssertionFailure() << "held trigger: " << errno_desc(e) << "; " << slurp(m_ / "error_log");
    if (auto r = open_shared(env_); !r) return r;
    if (!board_.ok()) return ::testing::AssertionFailure() << "mmap: " << std::strerror(errno);
    workers_ = std::make_unique<Workers>(env_, *board_);
    if (workers_->AddProcess({{kIrqEntryEnable, kIrqExitRawEnable}, {kOwnStacktrace}, false, true, true, seed_ + 1}) <
        0)
      return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
    markers_ = std::make_unique<MarkerWriter>(inst_ + "/trace_marker", 0, 900000, 10, 1000us);
    const int cpus = mount_cpus(m_.path());
    readers_.push_back(start_reader(m_ / "trace_pipe"));
    readers_.push_back(start_reader(m_ / "trace_pipe"));
    for (int c = 0; c < cpus; ++c)
      readers_.push_back(start_reader(m_ / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw")));
    kids_.SpawnCat(m_ / "trace_pipe");
    kids_.SpawnCat(m_ / "per_cpu/cpu0/trace_pipe_raw");
    workers_->AddThread({{kWakeupFilter, kWakeupEnable}, {kOwnMigrate, kOwnTraceoff}, true, false, true, seed_ + 2});
    workers_->AddThread(
        {{kFreeRawFilter, kWakeupRawEnable}, {kOwnRawSoftirq, kOwnCpuIdle}, false, true, true, seed_ + 3});
    workers_->Go(60s);  // until Stop
    return ::testing::AssertionSuccess();
  }

  // After the signal: no more markers or control operations.
  void Quiet() {
    if (markers_) markers_->Stop();
    if (workers_) workers_->Stop();
  }

  // Waits (bounded) for every reader thread and cat to end; the ones that did not.
  std::vector<std::string> WaitReaders(std::chrono::milliseconds limit) {
    std::vector<std::string> out;
    wait_until(
        [&] {
          kids_.Reap();
          for (const auto& r : readers_)
            if (!r->done) return false;
          for (std::size_t i = 0; i < kids_.size(); ++i)
            if (!kids_.Status(i)) return false;
          return true;
        },
        limit);
    for (const auto& r : readers_)
      if (!r->done) out.push_back("reader thread of " + r->path);
    for (std::size_t i = 0; i < kids_.size(); ++i)
      if (!kids_.Status(i)) out.push_back("cat " + std::to_string(kids_.pid(i)));
    return out;
  }

  // Waits for the control workers; the stuck ones.
  std::vector<std::string> WaitWorkers(std::chrono::milliseconds limit) {
    auto stuck = workers_ ? workers_->Wait(limit) : std::vector<std::string>{};
    if (stuck.empty()) close_shared(env_);
    return stuck;
  }

  // Ends whatever is left (the daemon must be gone or going for that).
  void Finish() {
    Quiet();
    if (workers_) {
      workers_->Wait(5s);
      workers_->JoinAll();
      workers_.reset();
    }
    close_shared(env_);
    kids_.KillAll(SIGKILL, 2s);
  }

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
  void add_readers(RoundLoad& load) {
    for (const auto& r : load.readers()) {
      ++streams;
      if (!r->done) continue;
      reader_reads += r->reads;
      reader_bytes += r->bytes;
      ++endings[r->last_n == 0 ? "end of file" : r->last_n < 0 ? errno_desc(r->last_err) : "data"];
    }
    streams += static_cast<long>(load.kids().size());
    markers += load.markers_written();
  }
  std::string endings_text() const {
    std::string out;
    for (const auto& [k, n] : endings) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(n);
    return out;
  }
};

}  // namespace eventfs_it::fault
