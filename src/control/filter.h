// The kernel's event filter grammar (Documentation/trace/events.rst, "Event
// filtering"), translated between stable and raw field names.
//
//   expr := pred | '(' expr ')' | '!' expr | expr '&&' expr | expr '||' expr
//   pred := field op value        op := == != < <= > >= & ~
//
// Translation rewrites only the field names (and, for a task_state() field,
// the whole predicate), so the rest of the text stays as the user wrote it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "control/variables.h"
#include "error/result.h"
#include "format/raw_event.h"

namespace eventfs {

// How one stable field name appears in the raw event.
struct FilterField {
  std::string raw_name;
  bool task_state = false;
  FlagTable states;  // task_state only
};

// Stable field name -> raw. Names starting with common_, and CPU and COMM,
// are the kernel's own and pass through unchanged.
using FilterFieldMap = std::map<std::string, FilterField>;

struct FilterError {
  std::string message;  // the kernel's wording where it has one
  std::size_t pos = 0;  // byte offset into the text the user wrote
};

// A translated filter and where each rewritten piece came from, so that an
// error position in the raw text maps back to the stable text.
struct TranslatedFilter {
  std::string raw;
  struct Span {
    std::size_t stable_pos, stable_len, raw_pos, raw_len;
  };
  std::vector<Span> spans;
  std::set<std::string> variables;  // the variables it names
  bool unset_variable = false;      // one of them is unset: `raw` is kNeverFilter
  std::size_t stable_pos_of(std::size_t raw_pos) const;
};

// What the kernel is given for a condition that names an unset variable: no
// event matches it (pids are never negative).
inline constexpr const char* kNeverFilter = "common_pid < 0";

using FilterResult = Result<TranslatedFilter, FilterError>;

// Stable -> raw; an error (nothing to apply) when the filter is malformed,
// names an unknown field, or uses a computed field in a way that cannot be
// inverted.
FilterResult translate_filter(std::string_view stable, const FilterFieldMap& fields);
// The same with saved variables: a value that is a bare word naming one of
// `vars` is replaced by the variable's value (the whole filter by
// kNeverFilter while it is unset). With `fields` null the field names are
// the kernel's (a raw event's filter) and are not checked.
FilterResult translate_filter(std::string_view text, const FilterFieldMap* fields, const VariableValues* vars);

// Whether a value of `text` is a bare word naming one of `vars`: as the
// filter grammar reads it, or, where it does not accept the text, any word
// outside quotes.
bool names_a_variable(std::string_view text, const VariableValues& vars);

// Raw -> stable for read-back: renames raw field names that a plain stable
// field maps to; anything else is left as the kernel printed it.
std::string rename_filter_fields(std::string_view raw, const std::map<std::string, std::string>& raw_to_stable);

}  // namespace eventfs
