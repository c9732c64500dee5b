// types/: the named types the stable formats use, in the layout of the RFC's
// review thread. An integer type:
//
//   parent = integer;
//   size = <bits>;
//   signed = <true|false>;
//   align = <bytes>;
//
// An enumeration adds its value map, taken from the running kernel's print
// fmt tables, and the stable fields that carry it (the format files keep the
// field's integer type, so the RFC's formats stay as they were):
//
//   parent = enum;
//   size = 32;
//   signed = false;
//   align = 4;
//   map = {
//   	{ 0, "HI" },
//   };
//   fields = {
//   	softirq_entry.vec,
//   };
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "format/raw_event.h"
#include "format/type_model.h"

namespace eventfs {

// Value -> name, in the order the kernel's table lists them.
using EnumMap = std::vector<std::pair<std::int64_t, std::string>>;

// One stable field's use of a named type.
struct TypeUse {
  std::string event;
  std::string field;
  ScalarType type;        // the element type for arrays
  std::string enum_name;  // empty: the integer type itself
  EnumMap map;            // enum only
};

// The map of a __print_symbolic() table, values read with the field's sign.
EnumMap symbolic_enum_map(const FlagTable& table, const ScalarType& type);

// The map of a task_state() field: 'R' (no bit set), then the first letter of
// each __print_flags() entry, each named by its letters, valued by the
// letter's character code (the value a task_state() field holds).
EnumMap task_state_enum_map(const FlagTable& states);

// File name -> contents of every named type the uses need. An enumeration's
// map is the union of its uses' maps (the first name given a value wins);
// its fields are listed in the order of the uses.
std::map<std::string, std::string> named_type_files(const std::vector<TypeUse>& uses);

}  // namespace eventfs
