#include "ring/any_cpu_readiness.h"

#include <unistd.h>


#include "tracefs/instance.h"

namespace eventfs {

int open_any_cpu_readiness(const RingFiles& files, std::string& error) {
  int fd = files.open_trace_pipe(error);
  if (fd < 0) return -1;
  // (A plain file polls readable at all times.)
  if (!is_tracefs_fd(fd)) {
    ::close(fd);
    error = "the instance's trace_pipe is not a tracefs file";
    return -1;
  }
  return fd;
}

}  // namespace eventfs
