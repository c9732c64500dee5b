// The libfuse low-level glue: the only code that calls fuse_reply_*.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

namespace eventfs {

class NodeTree;

// Operations whose userdata is a NodeTree*.
const fuse_lowlevel_ops& fuse_operations();

}  // namespace eventfs
