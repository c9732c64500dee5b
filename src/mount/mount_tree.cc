#include "mount/mount_tree.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "format/named_types.h"
#include "fs/simple_files.h"
#include "format/record_header_text.h"
#include "tracefs/raw_format_parser.h"

namespace eventfs {

const char* mount_readme_text() {
  return R"(eventfs: stable Linux trace events

This directory holds trace events whose format and binary record layout do
not change from one kernel to the next. eventfs translates them to whatever
raw tracepoints the running kernel has.

 available_events	- the stable events this kernel can supply
 unavailable_events	- catalog events it cannot supply, and why (name: reason)
 header			- the binary records' framing in the same language
 types/<type>		- each named type of the formats: parent = integer or
			  enum, size (bits), signed, align (bytes); an enum's
			  value map (from the kernel's print fmt) and its fields
 <event>/format		- the stable format: one line per field,
			  field:<name> type:<type> size:<bits> align:<bytes> signed:<0|1>;
			  array:<name> type:<type> size:<bits> count:<n> align:<bytes> signed:<0|1>;
 <event>/id		- the stable id of the event (never the kernel's id)
 <event>/enable		- echo 1 to record the event, 0 to stop
 <event>/filter		- a filter in the event's stable field names; 0 clears
 <event>/trigger	- command[:count] [if filter], as tracefs takes them, in
			  stable names: enable_event:<event>, disable_event:<event>
			  (globs allowed), traceon, traceoff, stacktrace,
			  save:NAME=FIELD; !cmd removes; several in one write
 error_log		- why the last writes were refused
 trace_clock		- the clock of the records' time stamps (the instance's)
 variables		- saved variables: NAME=VALUE sets one, NAME declares one
			  (unset), !NAME removes one; filters and trigger
			  conditions compare a field with one by name, and the
			  trigger save:NAME=FIELD captures a field into one
 trace_pipe		- the records of all enabled stable events, as text
 per_cpu/cpuN/trace_pipe_raw
			- CPU N's records in the binary framing of <eventfs/record.h>
 per_cpu/cpuN/stats	- records read and lost on CPU N
 raw/<system>/<event>/format
			- every raw event of this kernel in the same language;
			  dynarray:<name> ... loc:<data_loc|rel_loc|tail> marks a
			  variable-length array; enable, filter and trigger there
			  take the kernel's own names

See eventfs(5) for the files, eventfs-format(5) for the format language and
eventfs(8) for the daemon.
)";
}

std::string stable_format_text(const StableEvent& ev) { return render_format(ev.format_fields()); }

Result<std::string> raw_format_text(const Tracefs& tracefs, const std::string& system, const std::string& event) {
  auto text = tracefs.read_format(system, event);
  if (!text) return std::move(text).error();
  auto raw = parse_raw_format(system, *text);
  if (!raw) {
    std::fprintf(stderr, "eventfs: raw/%s/%s/format: %s\n", system.c_str(), event.c_str(), raw.reason().c_str());
    return fail(EIO, raw.reason());
  }
  return render_format(raw_format_fields(*raw));
}

namespace {

std::shared_ptr<FileBehaviour> constant(std::string text) {
  return std::make_shared<ConstantFile>(std::move(text));
}

std::shared_ptr<FileBehaviour> control_file(ControlFile::Reader r, ControlFile::Writer w) {
  return std::make_shared<ControlFile>(std::move(r), std::move(w));
}

// The controller's held enable, kept by the open file it was written through.
struct HeldEnable final : OpenHold {
  Controller::Hold hold;
};

// An `enable` file: `write(data, hold)` is the controller's write, given the
// open's hold to fill.
template <typename Write>
std::shared_ptr<FileBehaviour> enable_file(ControlFile::Reader r, Write write) {
  return ControlFile::with_holds(std::move(r), [write](std::string_view d, std::unique_ptr<OpenHold>& held) {
    Controller::Hold hold;
    if (int e = write(d, &hold)) return e;
    if (hold) {
      auto h = std::make_unique<HeldEnable>();
      h->hold = std::move(hold);
      held = std::move(h);
    }
    return 0;
  });
}

// Which of an event's control files it gets.
struct ControlFiles {
  bool enable = false;
  bool filter = false;
  bool trigger = false;
};

// The control files of `ev` that `files` asks for.
void add_controls(NodeTree& tree, Node& dir, Controller& c, const ControlEvent& ev, ControlFiles files) {
  if (files.enable)
    tree.add_file(dir, "enable", NodeTree::kReadWriteMode,
                  enable_file([&c, ev](std::string& out) { return c.read_enable(ev, out); },
                              [&c, ev](std::string_view d, Controller::Hold* hold) { return c.write_enable(ev, d, hold); }));
  if (files.filter)
    tree.add_file(dir, "filter", NodeTree::kReadWriteMode,
                  control_file([&c, ev](std::string& out) { return c.read_filter(ev, out); },
                               [&c, ev](std::string_view d) { return c.write_filter(ev, d); }));
  if (files.trigger)
    tree.add_file(dir, "trigger", NodeTree::kReadWriteMode,
                  control_file([&c, ev](std::string& out) { return c.read_trigger(ev, out); },
                               [&c, ev](std::string_view d) { return c.write_trigger(ev, d); }));
}

void add_raw_event_dir(NodeTree& tree, Node& sys_dir, const Tracefs& tracefs, Controller* c,
                       const std::string& system, const std::string& event) {
  Node& ev_dir = tree.add_dir(sys_dir, event);
  tree.add_file(ev_dir, "format", NodeTree::kReadOnlyMode,
                std::make_shared<ConstantFile>([&tracefs, system, event](std::string& out) {
                  Result<std::string> text = raw_format_text(tracefs, system, event);
                  if (!text) return text.code();
                  out = std::move(*text);
                  return 0;
                }));
  if (!c) return;
  // Only the control files the kernel has for this event (ftrace's own
  // events have neither enable nor filter).
  auto has = [&](const char* file) { return tracefs.has_event_file(system, event, file); };
  add_controls(tree, ev_dir, *c, EventName{system, event},
               {.enable = has("enable"), .filter = has("filter"), .trigger = has("trigger")});
}

void add_raw_mirror(NodeTree& tree, const Tracefs& tracefs, Controller* c) {
  Node& raw = tree.add_dir(tree.root(), "raw");
  for (const auto& system : tracefs.systems()) {
    tree.add_dir(raw, system, [&tree, &tracefs, c, system](Node& self) {
      for (const auto& event : tracefs.events(system))
        add_raw_event_dir(tree, self, tracefs, c, system, event);
    });
  }
}

void add_error_log(NodeTree& tree, Controller& c) {
  ErrorLog& log = c.error_log();
  tree.add_file(tree.root(), "error_log", NodeTree::kReadWriteMode,
                std::make_shared<ControlFile>(
                    [&log](std::string& out) {
                      out = log.text();
                      return 0;
                    },
                    [&log](std::string_view) {
                      log.clear();  // any write clears it, as on tracefs
                      return 0;
                    },
                    [&log] { log.clear(); }));
}

void add_trace_clock(NodeTree& tree, Controller& c) {
  tree.add_file(tree.root(), "trace_clock", NodeTree::kReadOnlyMode,
                control_file(
                    [&c](std::string& out) {
                      auto clock = c.read_trace_clock();
                      if (clock) out = std::move(clock).value();
                      return clock.code();
                    },
                    nullptr));
}

void add_variables(NodeTree& tree, Controller& c) {
  tree.add_file(tree.root(), "variables", NodeTree::kReadWriteMode,
                control_file([&c](std::string& out) { return c.read_variables(out); },
                             [&c](std::string_view d) { return c.write_variables(d); }));
}

std::vector<std::shared_ptr<StreamFile>> add_streams(NodeTree& tree, StreamHub& hub) {
  std::vector<std::shared_ptr<StreamFile>> files;
  auto text = std::make_shared<StreamFile>(hub.text_channel());
  tree.add_file(tree.root(), "trace_pipe", NodeTree::kReadOnlyMode, text);
  files.push_back(text);
  hub.on_data([text] { text->data_ready(); });  // every CPU's records
  Node& per_cpu = tree.add_dir(tree.root(), "per_cpu");
  for (int cpu = 0; cpu < hub.cpus(); ++cpu) {
    Node& dir = tree.add_dir(per_cpu, fmt::format("cpu{}", cpu));
    auto raw = std::make_shared<StreamFile>(hub.cpu_channel(cpu));
    tree.add_file(dir, "trace_pipe_raw", NodeTree::kReadOnlyMode, raw);
    files.push_back(raw);
    hub.on_data([raw] { raw->data_ready(); }, cpu);  // CPU cpu's only
    tree.add_file(dir, "stats", NodeTree::kReadOnlyMode,
                  std::make_shared<ControlFile>(
                      [&hub, cpu](std::string& out) {
                        out = hub.stats_text(cpu);
                        return 0;
                      },
                      nullptr));
  }
  return files;
}

}  // namespace

std::vector<std::shared_ptr<StreamFile>> build_mount_tree(NodeTree& tree, const Tracefs& tracefs,
                                                          const Resolution& resolution, MountServices services) {
  Controller* control = services.control;
  Node& root = tree.root();
  tree.add_file(root, "README", NodeTree::kReadOnlyMode, constant(mount_readme_text()));

  std::vector<std::string> names;
  for (const auto& b : resolution.available) names.push_back(b.event->name);
  std::sort(names.begin(), names.end());
  std::string available;
  for (const auto& n : names) available += n + "\n";
  tree.add_file(root, "available_events", NodeTree::kReadOnlyMode, constant(available));
  tree.add_file(root, "header", NodeTree::kReadOnlyMode, constant(record_header_text()));
  Node& types = tree.add_dir(root, "types");
  std::vector<TypeUse> uses = type_uses(resolution);
  for (const auto& fields : {record_header_fields(), lost_record_fields()})
    for (const auto& f : fields) uses.push_back({"header", f.name, f.type, "", {}});
  for (const auto& [name, text] : named_type_files(uses))
    tree.add_file(types, name, NodeTree::kReadOnlyMode, constant(text));

  std::string unavailable;
  for (const auto& [name, reason] : resolution.unavailable)
    unavailable += fmt::format("{}: {}\n", name, reason);
  tree.add_file(root, "unavailable_events", NodeTree::kReadOnlyMode, constant(unavailable));

  if (control) {
    add_error_log(tree, *control);
    add_trace_clock(tree, *control);
    add_variables(tree, *control);
  }

  for (std::size_t i = 0; i < resolution.available.size(); ++i) {
    const Binding& b = resolution.available[i];
    Node& dir = tree.add_dir(root, b.event->name);
    tree.add_file(dir, "format", NodeTree::kReadOnlyMode, constant(stable_format_text(*b.event)));
    tree.add_file(dir, "id", NodeTree::kReadOnlyMode, constant(fmt::format("{}\n", b.event->id)));
    // enable always (an event the kernel always records reads 1); filter
    // and trigger where the raw event has them.
    if (control)
      add_controls(tree, dir, *control, i,
                   {.enable = true,
                    .filter = tracefs.has_event_file(b.raw.system, b.raw.name, "filter"),
                    .trigger = tracefs.has_event_file(b.raw.system, b.raw.name, "trigger")});
  }
  add_raw_mirror(tree, tracefs, control);
  if (!services.streams) return {};
  return add_streams(tree, *services.streams);
}

}  // namespace eventfs
