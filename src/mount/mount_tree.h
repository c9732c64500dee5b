// What the mount contains: builds the node tree from the resolved catalog and
// the kernel's raw events. No FUSE here.
#pragma once

#include "catalog/catalog.h"
#include "control/controller.h"
#include "error/result.h"
#include "fs/node_tree.h"
#include "fs/stream_file.h"
#include "stream/stream_hub.h"
#include "projection/binding.h"
#include "tracefs/tracefs.h"

namespace eventfs {

// What the mount needs beyond the formats: both absent over a plain
// directory (not a tracefs), where the mount has formats only.
struct MountServices {
  Controller* control = nullptr;  // enable, filter, trigger, error_log
  StreamHub* streams = nullptr;   // trace_pipe, per_cpu/
};

// `tracefs`, `resolution` and the services must outlive the tree.
// raw/<system>/ is filled on first use and each raw format is rendered on
// first use. Returns the stream files, to be ended when the mount goes.
std::vector<std::shared_ptr<StreamFile>> build_mount_tree(NodeTree& tree, const Tracefs& tracefs,
                                                          const Resolution& resolution, MountServices services);

// The text of the README file.
const char* mount_readme_text();

// The stable format text of a bound event.
std::string stable_format_text(const StableEvent& ev);

// A raw event's format in the new language; EIO when the kernel's format
// cannot be parsed (said on stderr too), else why it cannot be read.
Result<std::string> raw_format_text(const Tracefs& tracefs, const std::string& system, const std::string& event);

}  // namespace eventfs
