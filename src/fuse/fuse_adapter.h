// The libfuse low-level glue: the only code that calls fuse_reply_*.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

namespace eventfs {

class NodeTree;

// Operations whose userdata is a NodeTree*.
const fuse_lowlevel_ops& fuse_operations();

// What the session's INIT needs from the command line, set before the loop
// runs: the -o max_read=N given to libfuse (0 if none; libfuse refuses an
// INIT whose answer does not repeat it), and what to call once INIT is
// answered well.
struct SessionInit {
  unsigned max_read = 0;
  void (*served)() = nullptr;
};
void set_session_init(const SessionInit& init);

// Frees the files the kernel never released (it need not, once the mount is
// gone). Only after the session loop has ended.
void release_open_files();

}  // namespace eventfs
