// A raw kernel trace event as the tracefs metadata describes it: where each
// field sits in the record, and the tables its print format carries.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "format/format_text.h"

namespace eventfs {

struct RawField {
  std::string name;
  std::string elem_type;  // C type of one element: "char", "unsigned long", "u64"
  unsigned offset = 0;    // bytes from the start of the record (common fields included)
  unsigned size = 0;      // bytes the field occupies in the record (4 for __data_loc)
  unsigned elem_bytes = 0;
  bool is_signed = false;
  FieldShape shape = FieldShape::Scalar;
  unsigned count = 0;            // Array
  DynLoc loc = DynLoc::DataLoc;  // DynArray
  bool is_pointer = false;
};

// One __print_flags() table (bit value -> letter(s)) or __print_symbolic()
// table (value -> name), in the order printed. A negative symbolic value is
// held as its two's complement.
using FlagTable = std::vector<std::pair<std::uint64_t, std::string>>;

struct RawEvent {
  std::string system;
  std::string name;
  int id = -1;
  std::vector<RawField> common_fields;
  std::vector<RawField> fields;
  std::map<std::string, FlagTable> print_flags;    // by the raw field they decode
  std::map<std::string, FlagTable> print_symbols;  // __print_symbolic(), likewise

  // Searches the event's own fields, then the common ones.
  const RawField* field(const std::string& name) const;
};

// The raw event in the new format language (its own fields, no common_*).
std::vector<FormatField> raw_format_fields(const RawEvent& ev);

}  // namespace eventfs
