// The command line of eventfs-record.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace eventfs::record {

struct Options {
  std::string mount;                 // -m; empty: find_eventfs_mount()
  std::vector<std::string> events;   // stable names or globs (-e)
  std::string out_dir;               // -o; empty: a name made from the time
  std::optional<double> seconds;     // -t
  std::vector<std::string> command;  // after --
  bool help = false;
  bool version = false;
};

// Parses argv; throws UsageError with a one-line message on bad usage.
Options parse_options(int argc, char** argv);

struct UsageError {
  std::string message;
};

const char* usage_text();

}  // namespace eventfs::record
