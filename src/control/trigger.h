// The kernel's event trigger grammar (Documentation/trace/events.rst, "Event
// triggers"), one command per write:
//
//   [!]<command>[:<target>][:<count>] [if <filter>]
//
// where <target> is enable_event/disable_event's event: a stable name or glob
// on stable trigger files, <system>:<event> on raw ones.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/filter.h"

namespace eventfs {

struct TriggerCommand {
  bool remove = false;
  std::string command;
  std::string target;  // stable name/glob, or "system:event" when raw
  std::optional<std::string> count;
  bool has_filter = false;
  std::string filter;
  std::size_t command_pos = 0, target_pos = 0, count_pos = 0, filter_pos = 0;

  bool takes_target() const { return command == "enable_event" || command == "disable_event"; }
  // The text the kernel is given: [!]command[:target][:count][ if filter].
  std::string kernel_text(const std::string& kernel_target, const std::string& kernel_filter) const;
};

enum class TargetStyle { Stable, Raw };

// Parses one write. Fails (with the kernel's wording where it has one, and
// the byte offset of the problem) on an unknown command, empty input, more than one line,
// control bytes, a bad count, a missing target, an `if` without a filter.
bool parse_trigger(std::string_view text, TargetStyle style, TriggerCommand& out, FilterError& err);

// Every trigger command the kernel has ever had (whether this one has it is
// in its "Available triggers" list).
const std::vector<std::string>& known_trigger_commands();

// The commands listed in a trigger file's "# Available triggers:" header.
std::vector<std::string> available_triggers_from(std::string_view trigger_file_text);

// True if `pattern` has glob characters (*, ?, [).
bool is_glob(std::string_view pattern);

}  // namespace eventfs
