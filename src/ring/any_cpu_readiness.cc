#include "ring/any_cpu_readiness.h"

#include <unistd.h>

#include <cerrno>

#include "tracefs/instance.h"

namespace eventfs {

Result<int> open_any_cpu_readiness(const RingFiles& files) {
  Result<int> fd = files.open_trace_pipe();
  if (!fd) return fd;
  // (A plain file polls readable at all times.)
  if (!is_tracefs_fd(*fd)) {
    ::close(*fd);
    return fail(ENOTSUP, "the instance's trace_pipe is not a tracefs file");
  }
  return fd;
}

}  // namespace eventfs
