// The kernel's event trigger grammar (Documentation/trace/events.rst, "Event
// triggers"):
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
  std::string source;  // the command as written, trimmed (hist's own syntax goes to the kernel as it is)

  bool takes_target() const { return command == "enable_event" || command == "disable_event"; }
  // eventfs's own command, save:NAME=FIELD (`target` holds "NAME=FIELD").
  bool is_save() const;
  std::string save_variable() const { return target.substr(0, target.find('=')); }
  std::string save_field() const { return target.substr(target.find('=') + 1); }
  // The text the kernel is given: [!]command[:target][:count][ if filter].
  std::string kernel_text(const std::string& kernel_target, const std::string& kernel_filter) const;
};

enum class TargetStyle { Stable, Raw };

// Parses one write. Fails (with the kernel's wording where it has one, and
// the byte offset of the problem) on an unknown command, empty input, more than one line,
// control bytes, a bad count, a missing target, an `if` without a filter.
using TriggerResult = Result<TriggerCommand, FilterError>;
TriggerResult parse_trigger(std::string_view text, TargetStyle style);

// Several commands in one write, as the 2013 proposal's first example has
// them. A command begins at a known command name (trigger_command_words()),
// with or without '!', at the start of the text or after white space outside
// a quoted string, followed by ':', white space or the end; everything up to
// the next one is its own (count, `if` filter; a newline is white space, so a
// filter may go on over lines but ends where the next command begins). A
// field or value spelled like a command name must be quoted. Positions in
// the commands and the error are offsets into `text`. At least one command.
Result<std::vector<TriggerCommand>, FilterError> parse_triggers(std::string_view text, TargetStyle style);

// Every trigger command the kernel has ever had (whether this one has it is
// in its "Available triggers" list).
const std::vector<std::string>& known_trigger_commands();
// eventfs's own: captures a field of the triggering event into a variable.
inline constexpr const char* kSaveCommand = "save";
// Both.
const std::vector<std::string>& trigger_command_words();

// The commands listed in a trigger file's "# Available triggers:" header.
std::vector<std::string> available_triggers_from(std::string_view trigger_file_text);

// True if `pattern` has glob characters (*, ?, [).
bool is_glob(std::string_view pattern);

}  // namespace eventfs
