// The files of a tracefs instance that its ring buffers are read through, for
// the ring readers (src/ring/): the only place their paths are built and
// they are opened. Copyable; it holds the instance's path.
#pragma once

#include <cstdint>
#include <string>

#include "error/result.h"

namespace eventfs {

class RingFiles {
 public:
  explicit RingFiles(std::string instance_path) : path_(std::move(instance_path)) {}

  // per_cpu/cpuN/trace_pipe_raw, opened read-only and non-blocking: its
  // descriptor, or the open's errno and "PATH: reason".
  Result<int> open_raw_pipe(int cpu) const;
  std::string raw_pipe_path(int cpu) const;
  // The instance's trace_pipe: readable when any CPU's ring has a record.
  // (As open_raw_pipe().)
  Result<int> open_trace_pipe() const;
  // The "overrun:" count of per_cpu/cpuN/stats, or why it cannot be read.
  Result<std::uint64_t> read_overrun(int cpu) const;
  // The text of the kernel's per_cpu/cpuN/stats, or why it cannot be read.
  Result<std::string> read_stats(int cpu) const;
  // events/header_page and events/header_event: the instance's, else the top
  // level's; empty when neither has it (a copy of the tree for tests). `where`
  // (if given) gets the path the text came from.
  std::string header_page() const;
  std::string header_event(std::string* where = nullptr) const;
  // The kernel's saved_cmdlines ("<pid> <comm>" lines; the top level's, as
  // instances have none); empty when there is none.
  std::string saved_cmdlines() const;
  // buffer_subbuf_size_kb in bytes (Linux >= 6.8); 0 where there is none.
  std::uint32_t subbuf_bytes() const;

 private:
  std::string first_of(const char* rel, std::string* where) const;
  std::string path_;
};

}  // namespace eventfs
