// Per-CPU readers of a tracefs instance's ring buffer: what comes out is the
// raw kernel records of one CPU, in order, with the kernel's lost-event
// reports at the place they happened. FUSE-free; nothing is allocated per
// record (records are handed out in place, pointing into the sub-buffer).
//
//  * mmap mode (Linux >= 6.10): maps the meta page and the sub-buffers of
//    per_cpu/cpuN/trace_pipe_raw and walks the reader sub-buffer in place,
//    asking the kernel for the next one with TRACE_MMAP_IOCTL_GET_READER.
//  * read mode: takes the sub-buffers the writer has left from
//    per_cpu/cpuN/trace_pipe_raw with splice(2), many a call, into a pipe
//    and read(2)s them out of it at once; the one the writer is on with
//    read(2) of trace_pipe_raw (each read copies one sub-buffer, or what
//    the writer has put in it, and consumes it in the kernel).
// Both walk sub-buffers with SubbufParser (ring/subbuf.h).
//
// Opening a ring consumes nothing: the kernel's reader only moves in drain().
// One CpuRing per CPU, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "error/result.h"
#include "tracefs/ring_files.h"

namespace eventfs {

enum class ReaderMode { Auto, Mmap, Read };

// "auto", "mmap", "read" (the -o reader= values); EINVAL for anything else.
Result<ReaderMode> parse_reader_mode(std::string_view text);
const char* reader_mode_name(ReaderMode mode);

// Receives a CPU's records and lost-event reports, in ring order.
class RingSink {
 public:
  virtual ~RingSink() = default;
  // One raw record (common_type first) of `len` bytes (the kernel's length,
  // rounded up to 4), valid only during the call; `ts` in the trace clock.
  virtual void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) = 0;
  // Events the kernel lost before the next record. `count_unknown`: the
  // kernel marked the gap without its size; count is then eventfs's estimate
  // from the overrun counter (mmap mode) or 0 (read mode). `ts` is the time
  // stamp of the sub-buffer that follows the gap.
  virtual void lost(std::uint64_t ts, std::uint64_t count, bool count_unknown) = 0;
};

struct RingStats {
  std::uint64_t entries = 0;         // records delivered
  std::uint64_t lost = 0;            // sum of the lost counts delivered
  std::uint64_t lost_reports = 0;    // lost() calls
  std::uint64_t unknown_lost = 0;    // sub-buffers marked "lost, count not stored"
  std::uint64_t overrun = 0;         // kernel overrun counter growth since the loss baseline
  std::uint64_t overrun_counter = 0; // the kernel's overrun counter when last seen (0 if unknown)
  std::uint64_t subbufs = 0;         // sub-buffers started
  std::uint64_t swaps = 0;           // TRACE_MMAP_IOCTL_GET_READER calls (mmap only)
  std::uint64_t spliced = 0;         // sub-buffers of `subbufs` that splice(2) took (read only)
  std::uint64_t splices = 0;         // splice(2) calls that took sub-buffers (read only)
};

class CpuRing {
 public:
  virtual ~CpuRing() = default;
  // Delivers at most max_records records (lost reports do not count) and
  // returns how many it delivered: max_records when there may be more,
  // fewer when nothing more is available now. Never blocks. On failure: the
  // errno and what the ring knows of why.
  virtual Result<std::size_t> drain(RingSink& sink, std::size_t max_records) = 0;
  // A descriptor to poll(POLLIN) on for data. Note the kernel wakes a poller
  // on trace_pipe_raw only once the ring is buffer_percent full (the
  // instance's buffer_percent file; 0 means any data).
  virtual int poll_fd() const = 0;
  // Losses are counted from when the kernel's overrun counter read
  // `overrun` (by default: its value when the ring was opened), so what the
  // kernel overwrote while nobody read is reported, with its count, at the
  // first sub-buffer read. Call before the first drain.
  virtual void count_losses_from(std::uint64_t overrun) = 0;
  virtual const char* mode() const = 0;  // "mmap" or "read"
  virtual RingStats stats() const = 0;
  virtual int cpu() const = 0;
  // Bytes of one sub-buffer, header included (0 while there is no ring).
  virtual std::uint32_t subbuf_size() const = 0;
  // False while the kernel has no ring for the CPU (ring/pending_ring.h).
  virtual bool has_ring() const { return true; }
  // Whether every record the kernel counts as consumed has been delivered.
  // Not so after an mmap drain whose GET_READER counted records the writer
  // committed after the walk: the next drain delivers them, but the
  // kernel's readiness (the instance's trace_pipe: any_cpu_readiness.h) no
  // longer announces them. Readers wait for that readiness only when their
  // ring is settled; a ring that is not is looked at again within
  // milliseconds. Cheap: no system call.
  virtual bool settled() const { return true; }
};

// Opens CPU `cpu` of a tracefs instance through its ring files (an
// instance, or the top level of a tracefs). Auto reads with read(2), which
// costs less than the mapping on every kernel that has one (eventfs(8),
// -o reader=). A CPU the kernel has no ring for yet (offline since the instance was
// made) gets a PendingCpuRing that opens the ring, in the same mode, once
// there is one. On failure: the errno and a one-line reason.
Result<std::unique_ptr<CpuRing>> open_cpu_ring(const RingFiles& files, int cpu, ReaderMode mode);

}  // namespace eventfs
