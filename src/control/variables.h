// Saved variables (eventfs(5), "Variables"): named integers that filters and
// trigger conditions compare fields with (`common_pid == mysaved_pid`), set
// by a write to the mount's `variables` file or captured from an event by a
// `save:` trigger. The kernel has no variables in filters: eventfs gives it
// the value in the variable's place, and the condition again whenever the
// value changes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "error/result.h"

namespace eventfs {

// Name -> value; no value: declared but unset.
using VariableValues = std::map<std::string, std::optional<std::int64_t>>;

constexpr std::size_t kMaxVariables = 64;
// Filters and kernel triggers whose conditions name variables, at most: a
// change of value rewrites each one in the kernel, which for an
// enable_event/disable_event trigger waits for the kernel's RCU grace
// periods (eventfs(5), "Variables").
constexpr std::size_t kMaxVariableUses = 32;
constexpr std::size_t kMaxVariableName = 64;

// One line of a write to `variables`:
//   NAME=VALUE   sets it (declaring it if new); VALUE is a decimal or 0x hex
//                integer, optionally negative, in 64 bits
//   NAME         declares it, or makes it unset
//   !NAME        removes it
struct VariableChange {
  enum class Kind { Set, Declare, Remove } kind = Kind::Set;
  std::string name;
  std::optional<std::int64_t> value;
  std::size_t pos = 0;  // where the line begins in the write
};

struct VariableError {
  std::string message;
  std::size_t pos = 0;
};

// Parses a whole write (one change per line; blank lines are skipped).
// `reserved` are the names a variable may not take (field names).
Result<std::vector<VariableChange>, VariableError> parse_variable_changes(std::string_view text,
                                                                          const std::set<std::string>& reserved);

// Why `name` cannot name a variable ("" if it can): it must be a C
// identifier of at most kMaxVariableName bytes, not a field of the kernel's
// (common_*, CPU, COMM), not in `reserved`, not a trigger command or "if".
std::string variable_name_problem(std::string_view name, const std::set<std::string>& reserved);

// A value as a filter takes it; "unset" for none.
std::string variable_value_text(const std::optional<std::int64_t>& v);

// The file's text: a line per variable, by name: "NAME=VALUE" or "NAME unset".
std::string variables_text(const VariableValues& values);

// Parses a saved field's raw bytes (the kernel's byte order, 1/2/4/8 bytes).
std::int64_t integer_from_bytes(const std::uint8_t* p, std::size_t size, bool is_signed);

}  // namespace eventfs
