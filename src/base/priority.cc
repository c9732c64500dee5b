#include "base/priority.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

namespace eventfs {

int nice_below_own(int steps) {
  errno = 0;
  int own = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0) own = 0;
  return std::max(own - steps, -20);
}

}  // namespace eventfs
