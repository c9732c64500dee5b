// The format language of the RFC, and its one extension:
//
//   \tfield:<name>\ttype:<type>\tsize:<bits>\talign:<bytes>\tsigned:<0|1>;
//   \tarray:<name>\ttype:<type>\tsize:<bits>\tcount:<n>\talign:<bytes>\tsigned:<0|1>;
//   \tdynarray:<name>\ttype:<type>\tsize:<bits>\tloc:<data_loc|rel_loc|tail>\talign:<bytes>\tsigned:<0|1>;
//
// `dynarray` (raw/ only) is a variable-length array: `data_loc` and `rel_loc`
// are the kernel's __data_loc/__rel_loc (a 32-bit offset and length word in
// the record), `tail` a flexible array running to the end of the record.
#pragma once

#include <string>
#include <vector>

#include "format/type_model.h"

namespace eventfs {

enum class FieldShape { Scalar, Array, DynArray };
enum class DynLoc { DataLoc, RelLoc, Tail };

struct FormatField {
  std::string name;
  ScalarType type;           // the element type for arrays
  FieldShape shape = FieldShape::Scalar;
  unsigned count = 0;        // Array only
  DynLoc loc = DynLoc::DataLoc;  // DynArray only
};

const char* dyn_loc_name(DynLoc loc);

// One line, tab-led and `;`-terminated, newline included.
std::string render_format_line(const FormatField& f);
std::string render_format(const std::vector<FormatField>& fields);

}  // namespace eventfs
