// Writes to control files that must be refused: each gives its errno, a line
// in error_log, and changes nothing. Shared by the unit tests (fake instance)
// and the integration tests (the real kernel).
#pragma once

#include <string>
#include <vector>

namespace eventfs::testing {

struct RefusedWrite {
  const char* what;
  const char* file;  // relative to the mount: "sched_switch/trigger"
  std::string data;
  int err;
  const char* log;  // a substring of the error_log line
};

// The table of refused writes, in the order the tests run them.
std::vector<RefusedWrite> refused_writes();

}  // namespace eventfs::testing
