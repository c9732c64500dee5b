// What a recording is written as: a CTF trace directory (metadata and a
// stream file per CPU; the default) or one trace.dat file. The recording
// asks its output for a sink per CPU (cpu_sink.h), tells it when the
// clock's offset to the real time is known, and finishes it at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "error/result.h"
#include "recorder/cpu_sink.h"
#include "recorder/mount_layout.h"
#include "recorder/options.h"
#include "recorder/trace_clock.h"

namespace eventfs::recorder {

class RecordingOutput {
 public:
  virtual ~RecordingOutput() = default;
  // Checks and makes the place it is written to.
  virtual Status prepare() = 0;
  // The sink of one CPU, its file made; `cpus`: how many there are.
  virtual Result<std::unique_ptr<CpuSink>> open_cpu(int cpu, std::size_t cpus) = 0;
  // Once the recording's start is read.
  virtual Status started(const ClockOffset& offset) = 0;
  // Once every sink is finished (whether or not the recording failed):
  // makes the output whole.
  virtual Status finish() = 0;
  // After a failure to start: removes what it made that holds nothing.
  virtual void abandon() = 0;
  // The path the summary names, and what its sinks' packets() count.
  virtual const std::string& path() const = 0;
  virtual const char* unit() const = 0;
};

// The output the options ask for, for the mount's `layout` (read already).
std::unique_ptr<RecordingOutput> make_output(const Options& opts, const MountLayout& layout);

}  // namespace eventfs::recorder
