// The libfuse low-level glue: the only code that calls fuse_reply_*.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

namespace eventfs {

class NodeTree;

// Operations whose userdata is a NodeTree*.
const fuse_lowlevel_ops& fuse_operations();

// Frees the files the kernel never released (it need not, once the mount is
// gone). Only after the session loop has ended.
void release_open_files();

}  // namespace eventfs
