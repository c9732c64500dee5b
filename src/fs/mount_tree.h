// What the mount contains: builds the node tree from the resolved catalog and
// the kernel's raw events. No FUSE here.
#pragma once

#include "catalog/catalog.h"
#include "control/controller.h"
#include "fs/node_tree.h"
#include "projection/binding.h"
#include "tracefs/tracefs.h"

namespace eventfs {

// `tracefs`, `resolution` and `control` must outlive the tree. raw/<system>/
// is filled on first use and each raw format is rendered on first use.
// Without a controller (a plain directory, not a tracefs) the mount has no
// control files.
void build_mount_tree(NodeTree& tree, const Tracefs& tracefs, const Resolution& resolution,
                      Controller* control);

// The text of the README file.
const char* mount_readme_text();

// The stable format text of a bound event.
std::string stable_format_text(const StableEvent& ev);

// A raw event's format in the new language; 0 or an errno (EIO when the
// kernel's format cannot be parsed).
int raw_format_text(const Tracefs& tracefs, const std::string& system, const std::string& event,
                    std::string& out);

}  // namespace eventfs
