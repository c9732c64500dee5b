#include "fs/mount_tree.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "tracefs/raw_format_parser.h"

namespace eventfs {

const char* mount_readme_text() {
  return R"(eventfs: stable Linux trace events

This directory holds trace events whose format and binary record layout do
not change from one kernel to the next. eventfs translates them to whatever
raw tracepoints the running kernel has.

 available_events	- the stable events this kernel can supply
 unavailable_events	- catalog events it cannot supply, and why (name: reason)
 <event>/format		- the stable format: one line per field,
			  field:<name> type:<type> size:<bits> align:<bytes> signed:<0|1>;
			  array:<name> type:<type> size:<bits> count:<n> align:<bytes> signed:<0|1>;
 <event>/id		- the stable id of the event (never the kernel's id)
 raw/<system>/<event>/format
			- every raw event of this kernel in the same language;
			  dynarray:<name> ... loc:<data_loc|rel_loc|tail> marks a
			  variable-length array

See eventfs(5) for the files and the format language, eventfs(8) for the daemon.
)";
}

std::string stable_format_text(const StableEvent& ev) { return render_format(ev.format_fields()); }

int raw_format_text(const Tracefs& tracefs, const std::string& system, const std::string& event,
                    std::string& out) {
  std::string text;
  if (int e = tracefs.read_format(system, event, text)) return e;
  RawEvent raw;
  std::string why;
  if (!parse_raw_format(system, text, raw, why)) {
    std::fprintf(stderr, "eventfs: raw/%s/%s/format: %s\n", system.c_str(), event.c_str(), why.c_str());
    return EIO;
  }
  out = render_format(raw_format_fields(raw));
  return 0;
}

namespace {

std::shared_ptr<FileBehaviour> constant(std::string text) {
  return std::make_shared<ConstantFile>(std::move(text));
}

void add_raw_event_dir(NodeTree& tree, Node& sys_dir, const Tracefs& tracefs,
                       const std::string& system, const std::string& event) {
  Node& ev_dir = tree.add_dir(sys_dir, event);
  tree.add_file(ev_dir, "format", NodeTree::kReadOnlyMode,
                std::make_shared<ConstantFile>([&tracefs, system, event](std::string& out) {
                  return raw_format_text(tracefs, system, event, out);
                }));
}

void add_raw_mirror(NodeTree& tree, const Tracefs& tracefs) {
  Node& raw = tree.add_dir(tree.root(), "raw");
  for (const auto& system : tracefs.systems()) {
    tree.add_dir(raw, system, [&tree, &tracefs, system](Node& self) {
      for (const auto& event : tracefs.events(system))
        add_raw_event_dir(tree, self, tracefs, system, event);
    });
  }
}

}  // namespace

void build_mount_tree(NodeTree& tree, const Tracefs& tracefs, const Resolution& resolution) {
  Node& root = tree.root();
  tree.add_file(root, "README", NodeTree::kReadOnlyMode, constant(mount_readme_text()));

  std::vector<std::string> names;
  for (const auto& b : resolution.available) names.push_back(b.event->name);
  std::sort(names.begin(), names.end());
  std::string available;
  for (const auto& n : names) available += n + "\n";
  tree.add_file(root, "available_events", NodeTree::kReadOnlyMode, constant(available));

  std::string unavailable;
  for (const auto& [name, reason] : resolution.unavailable)
    unavailable += fmt::format("{}: {}\n", name, reason);
  tree.add_file(root, "unavailable_events", NodeTree::kReadOnlyMode, constant(unavailable));

  for (const auto& b : resolution.available) {
    Node& dir = tree.add_dir(root, b.event->name);
    tree.add_file(dir, "format", NodeTree::kReadOnlyMode, constant(stable_format_text(*b.event)));
    tree.add_file(dir, "id", NodeTree::kReadOnlyMode, constant(fmt::format("{}\n", b.event->id)));
  }
  add_raw_mirror(tree, tracefs);
}

}  // namespace eventfs
