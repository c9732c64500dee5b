// The command line of eventfs-record.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "error/result.h"

namespace eventfs::recorder {

// What a recording is written as (-F, --format).
enum class OutputFormat { kCtf, kTraceDat };

struct Options {
  std::string mount;                 // -m; empty: find_eventfs_mount()
  std::vector<std::string> events;   // stable names or globs (-e)
  std::string out_dir;               // -o: the CTF directory or the trace.dat; empty: a name made from the time
  OutputFormat format = OutputFormat::kCtf;
  std::optional<double> seconds;     // -t
  std::optional<int> nice;           // -n; unset: 10 below eventfs-record's own
  std::vector<std::string> command;  // after --
  bool help = false;
  bool version = false;
};

// Bad usage: one line, which main() follows with a pointer to -h.
struct UsageError {
  std::string message;
};

// Parses argv; a UsageError on bad usage.
Result<Options, UsageError> parse_options(int argc, char** argv);

const char* usage_text();

}  // namespace eventfs::recorder
