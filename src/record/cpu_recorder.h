// The recorder of one CPU: reads <mount>/per_cpu/cpuN/trace_pipe_raw
// (O_NONBLOCK and poll(2)) and writes what it reads into that CPU's CTF
// stream, on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "error/result.h"
#include "record/mount_layout.h"
#include "record/stream_writer.h"

namespace eventfs::record {

// What every CPU's recorder shares with the main thread.
struct RecordControl {
  enum Phase { kRecord, kDrain, kStop };
  std::atomic<int> phase{kRecord};
  std::atomic<bool> failed{false};  // a recorder stopped on an error
};

class CpuRecorder {
 public:
  CpuRecorder(const MountLayout& layout, int cpu, RecordControl& control, std::size_t read_size);
  ~CpuRecorder();
  CpuRecorder(const CpuRecorder&) = delete;
  CpuRecorder& operator=(const CpuRecorder&) = delete;

  // Opens the stream and creates <dir>/stream_<cpu>.
  Status open(const std::string& dir);
  // Starts the thread; an error when the system has none to give.
  Status start();
  // Waits for the thread (which ends once the control's phase says so) and
  // writes the last packet; the error that stopped the recorder, if one did.
  Status join();

  int cpu() const { return cpu_; }
  const StreamWriter& writer() const { return writer_; }
  std::uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  std::uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }

 private:
  struct Kind {
    std::size_t size = 0, end = 0, padded = 0;
  };
  void run();
  // Stops this recorder (and tells the others) on its first error.
  void stop_on(Error e);
  // Writes the whole records at the start of buf_[0, n); returns the bytes used.
  std::size_t consume(const unsigned char* p, std::size_t n);

  const MountLayout& layout_;
  int cpu_;
  RecordControl& control_;
  std::unordered_map<std::uint32_t, Kind> kinds_;
  std::vector<std::uint64_t> buf_;  // 8-aligned, as records are
  std::size_t read_size_;
  int fd_ = -1;
  std::string path_;
  std::optional<Error> error_;  // set by the thread, read after join()
  StreamWriter writer_;
  std::thread thread_;
  std::atomic<std::uint64_t> events_{0}, lost_{0}, bytes_{0}, skipped_{0};
};

}  // namespace eventfs::record
