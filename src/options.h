// The daemon's command line: libfuse's -o style (fuse_opt), eventfs's own
// options checked and turned into values before anything is mounted. What
// main() does with them is the session's life (main.cc).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

#include <fuse_opt.h>

#include "error/result.h"
#include "ring/ring.h"

namespace eventfs {

struct DaemonOptions {
  std::string mountpoint;  // absolute where it exists (libfuse unmounts by it)
  std::string source = "eventfs";  // the fsname
  std::optional<std::string> tracefs;   // -o tracefs=DIR
  std::optional<std::string> catalog;   // -o catalog=PATH
  std::optional<std::string> instance;  // -o instance=NAME, not empty
  ReaderMode reader_mode = ReaderMode::Auto;
  int drainer_nice = 0;                 // -o nice=, or 10 below the daemon's own
  std::optional<int> drainer_fifo;      // -o rt=
  std::size_t queue_bytes = 0;          // -o queue_kb=, in bytes
  gid_t group = 0;                      // -o gid= (0: root's)
  unsigned max_read = 0;                // -o max_read= (0: libfuse's), also libfuse's
  bool foreground = false;
  bool single_thread = false;
  bool help = false;
  bool version = false;
};

// Bad usage: one line; `show_usage` when the usage text should come first.
struct OptionsError {
  std::string message;
  bool show_usage = false;
};

// Parses `args` (argc/argv as libfuse holds them): eventfs's options are
// taken out and checked, libfuse's own stay in `args` for
// fuse_session_new(). With -h or -V nothing else is checked. The mount
// point must be a directory.
Result<DaemonOptions, OptionsError> parse_daemon_options(fuse_args& args);

// The -h text.
void print_usage(FILE* to);

}  // namespace eventfs
