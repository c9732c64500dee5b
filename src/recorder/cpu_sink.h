// Where a CPU's recorder writes what it keeps: a CTF stream file
// (stream_writer.h) or a trace.dat's pages of that CPU (dat_cpu_writer.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "error/result.h"

namespace eventfs::recorder {

class CpuSink {
 public:
  virtual ~CpuSink() = default;

  // An event of stable id `id`; `payload` holds `size` bytes; the format's
  // fields end at `end` (what `size` lacks of it is zeros) and the largest
  // of them is aligned to `align` bytes (1, 2, 4 or 8).
  virtual Status add_event(std::uint64_t timestamp, std::uint32_t id, std::int32_t pid, const void* payload,
                           std::size_t size, std::size_t end, std::size_t align) = 0;
  // `count` events lost at `timestamp` (the time of what follows the gap).
  virtual Status add_lost(std::uint64_t timestamp, std::uint64_t count) = 0;
  // Writes what is still buffered; after it, nothing more is added.
  virtual Status finish() = 0;

  virtual std::uint64_t bytes_written() const = 0;
  // The units written whole: CTF packets, trace.dat pages.
  virtual std::uint64_t packets() const = 0;
};

}  // namespace eventfs::recorder
