// The binary layout a stable format implies: fields in declaration order, each
// at the next multiple of its alignment, the record rounded up to its largest
// alignment (like a C struct).
#pragma once

#include <cstddef>
#include <vector>

#include "format/format_text.h"

namespace eventfs {

struct FieldSlot {
  std::size_t offset = 0;
  std::size_t size = 0;  // bytes: element size times count for arrays
};

struct RecordLayout {
  std::vector<FieldSlot> slots;  // one per field, in declaration order
  std::size_t size = 0;
  std::size_t align = 1;
};

// Fields must be Scalar or Array (a stable record has no dynamic part).
RecordLayout layout_of(const std::vector<FormatField>& fields);

}  // namespace eventfs
