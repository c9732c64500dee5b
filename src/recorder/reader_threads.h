// The threads that read the CPUs' streams: one for every kCpusPerThread
// CPUs, at most kMaxThreads, each with one read buffer of kReadSize, each
// serving every n-th CPU (n threads) with poll(2). The recorder's memory for
// reading is bounded whatever the CPU count (kMaxThreads * kReadSize), and
// its resident size holds a buffer per thread; a thread reads its CPUs in turn, a few
// reads each, so that a busy CPU does not hold up the others; once they are
// all read empty it waits for records and lets them gather (ReadPacing,
// recorder/read_pacing.h) before reading again. The threads
// run at the nice value they are given: a recording's reader competes with
// the workload it records for its CPU, and one that falls behind leaves
// eventfs's queue to overflow (eventfs-record(1), -n).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "error/result.h"
#include "recorder/cpu_recorder.h"

namespace eventfs::recorder {

class ReaderThreads {
 public:
  static constexpr std::size_t kMaxThreads = 8;
  // A thread for every kCpusPerThread CPUs (up to kMaxThreads): one thread
  // keeps up with several CPUs' storms, and each holds its read buffer
  // resident (eventfs-record(1) and bench/RESULTS.md have the figures).
  static constexpr std::size_t kCpusPerThread = 4;
  // A read's whole buffer is resident (FUSE faults it in for the kernel to
  // write to); paced reads carry about half of it (ReadPacing::kTarget).
  static constexpr std::size_t kReadSize = 1024 * 1024;
  // The most the drain at the end takes: a CPU with records still unread
  // then (eventfs gave none of them) is marked (CpuRecorder::left_unread()).
  static constexpr std::chrono::seconds kDrainLimit{5};

  // The recorders outlive this object; `control` says when to stop; `nice`:
  // the threads' nice value (unset: the caller's).
  ReaderThreads(std::vector<CpuRecorder*> cpus, RecordControl& control, std::optional<int> nice = std::nullopt);
  // Stops (kStop) and joins threads still running.
  ~ReaderThreads();
  ReaderThreads(const ReaderThreads&) = delete;
  ReaderThreads& operator=(const ReaderThreads&) = delete;

  // Starts the threads, each at its nice value before it reads; an error
  // when the system has none to give (those started stop at once).
  Status start();
  // The errno of a thread refused its nice value (0: none was), once
  // start() has returned.
  int nice_refused() const { return nice_refused_.load(); }
  // Waits for the threads, which end once the control's phase is kStop, or
  // kDrain and their CPUs' streams are drained (reader_threads.cc).
  void join();

  std::size_t threads() const { return threads_.size(); }

 private:
  void run(std::vector<CpuRecorder*> mine);

  std::vector<CpuRecorder*> cpus_;
  RecordControl& control_;
  const std::optional<int> nice_;
  std::atomic<int> nice_refused_{0};
  std::unique_ptr<std::latch> placed_;  // start()'s; the threads count it down
  std::vector<std::thread> threads_;
};

}  // namespace eventfs::recorder
