// The recorder of one CPU: reads <mount>/per_cpu/cpuN/trace_pipe_raw
// (O_NONBLOCK) into a buffer a reader thread lends it (reader_threads.h) and
// writes what it reads into that CPU's sink (a CTF stream or a trace.dat's
// pages: cpu_sink.h). Records older than the
// recording's start on its CPU (set_start()), lost-events records included,
// are not written: they were in the rings before the recording began; nor
// are those at or after its end (set_end()): they came after it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "error/result.h"
#include "recorder/mount_layout.h"
#include "recorder/cpu_sink.h"

namespace eventfs::recorder {

// What every CPU's recorder shares with the main thread.
struct RecordControl {
  enum Phase { kRecord, kDrain, kStop };
  std::atomic<int> phase{kRecord};
  std::atomic<bool> failed{false};  // a recorder stopped on an error
};

class CpuRecorder {
 public:
  CpuRecorder(const MountLayout& layout, int cpu, RecordControl& control);
  ~CpuRecorder();
  CpuRecorder(const CpuRecorder&) = delete;
  CpuRecorder& operator=(const CpuRecorder&) = delete;

  // Opens the CPU's stream; what is read goes to `sink` (made already).
  Status open(std::unique_ptr<CpuSink> sink);

  enum class ReadResult { kData, kEmpty, kDone };
  // One read(2) of the stream into buf[0, cap) and what it held written:
  // kData, kEmpty (EAGAIN), or kDone when the recorder stopped (the stream
  // ended, or an error: see finish()). A read returns whole records when
  // `cap` holds the next one (eventfs(5)); a record larger is an error.
  ReadResult read_into(unsigned char* buf, std::size_t cap);
  // The bytes the last read_into() read (0 unless it gave kData).
  std::size_t last_read() const { return last_read_; }

  // Writes (or skips) the whole records at the start of p[0, n); returns
  // the bytes they take.
  std::size_t take(const unsigned char* p, std::size_t n);

  // Once no thread reads this recorder: writes the last packet (what was
  // read is kept, whatever stopped the recording); the error that stopped
  // the recorder, if one did.
  Status finish();

  int cpu() const { return cpu_; }
  // The trace clock's time on this recorder's CPU when the recording
  // started: older records are not written. Set before it is read.
  void set_start(std::uint64_t start) { start_ = start; }
  // The trace clock's time on this CPU when the recording ended (before its
  // events were let go): records from then on are not written, and once one
  // is read, every record of the recording's time on this CPU has been
  // (a CPU's stream is in time order). Set while the CPU is read.
  void set_end(std::uint64_t end) { end_.store(end, std::memory_order_relaxed); }
  bool past_end() const { return past_end_; }
  // Whether the mount's stats of this CPU say nothing waits unread (in the
  // kernel's ring or eventfs's queue; cpu_stats_lines.h).
  bool nothing_unread() const;
  // The drain of this CPU ended at its time limit; `unread`: records were
  // still waiting then (the summary says so).
  void ended_unread(bool unread) { left_unread_ = unread; }
  bool left_unread() const { return left_unread_; }
  int fd() const { return fd_; }
  bool stopped() const { return error_.has_value(); }
  // Its sink (open() was called with one).
  const CpuSink& sink() const { return *sink_; }
  std::uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  std::uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }
  // Records (lost-events records included) from before the start.
  std::uint64_t older() const { return older_.load(std::memory_order_relaxed); }
  // Records from the end on.
  std::uint64_t newer() const { return newer_.load(std::memory_order_relaxed); }

 private:
  struct Kind {
    std::size_t size = 0, end = 0, align = 1;
    bool chosen = false;
  };
  // Ids below this are looked up in a vector (the catalog's are small).
  static constexpr std::uint32_t kDenseIds = 4096;
  const Kind* kind_of(std::uint32_t id) const {
    if (id < dense_kinds_.size()) return dense_kinds_[id].chosen ? &dense_kinds_[id] : nullptr;
    if (id < kDenseIds) return nullptr;
    auto it = kinds_.find(id);
    return it == kinds_.end() ? nullptr : &it->second;
  }
  // The reading thread alone changes the counters: no locked add is needed.
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Stops this recorder (and tells the others) on its first error.
  void stop_on(Error e);
  Status write_record(const unsigned char* p);

  const MountLayout& layout_;
  int cpu_;
  RecordControl& control_;
  std::uint64_t start_ = 0;
  std::atomic<std::uint64_t> end_{UINT64_MAX};
  bool past_end_ = false;     // the reading thread's
  bool left_unread_ = false;  // the reading thread's, read once it is done
  std::size_t last_read_ = 0;  // the reading thread's
  std::vector<Kind> dense_kinds_;
  std::unordered_map<std::uint32_t, Kind> kinds_;  // the ids from kDenseIds on
  int fd_ = -1;
  std::string path_;
  std::optional<Error> error_;  // set by the reading thread, read after it is done
  std::unique_ptr<CpuSink> sink_;
  std::atomic<std::uint64_t> events_{0}, lost_{0}, bytes_{0}, skipped_{0}, older_{0},
      newer_{0};
};

}  // namespace eventfs::recorder
