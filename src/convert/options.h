// The command line of eventfs-convert.
#pragma once

#include <string>
#include <vector>

#include "error/result.h"
#include "recorder/options.h"

namespace eventfs::convert {

struct Options {
  std::string input;                 // the trace.dat to convert
  std::string catalog;               // -c; empty: the built-in catalog
  std::vector<std::string> events;   // -e: stable names or globs; none: every one the recording supplies
  std::string out;                   // -o: the CTF directory or the trace.dat
  recorder::OutputFormat format = recorder::OutputFormat::kCtf;
  bool list = false;                 // -l: list what the recording supplies, and why not
  bool help = false, version = false;
};

struct UsageError {
  std::string message;
};

Result<Options, UsageError> parse_options(int argc, char** argv);
const char* usage_text();

}  // namespace eventfs::convert
