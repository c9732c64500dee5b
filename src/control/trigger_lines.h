// The lines of a kernel trigger file, as the kernel lists them
// ("enable_event:sched:sched_switch:count=3 if prev_pid == 1"), and the
// writes that set or remove one again.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace eventfs {

// The non-empty lines of a file's text.
std::vector<std::string> lines_of(const std::string& text);

// "enable_event:sched:sched_switch:unlimited" -> its ':'-separated parts.
std::vector<std::string> colon_parts(const std::string& head);

// What the kernel counts as the same trigger when it refuses a second one
// with EEXIST: one enable_event or disable_event per target, one of traceon
// and traceoff, one stacktrace, one snapshot. Empty for commands whose rules
// are the kernel's alone (hist). `text` is a line or a write ("!" allowed).
std::string trigger_kind(std::string_view text);

// A line's command and target: "enable_event:sched:sched_switch", "traceon".
std::string line_identity(const std::string& line);

// A line as it is written to set it again: "traceon:count=5 if a == 1" ->
// "traceon:5 if a == 1", ":unlimited" dropped.
std::string input_form(const std::string& line);

// What removes a trigger written as `text`: "!" and its command and target,
// without count or filter.
std::string removal_of(const std::string& text);

}  // namespace eventfs
