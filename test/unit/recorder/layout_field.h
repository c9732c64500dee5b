// A field of a recording's layout (recorder/mount_layout.h), built in one line
// by the recorder's unit tests.
#pragma once

#include <string>

#include "recorder/mount_layout.h"

namespace eventfs::recorder {

inline Field layout_field(const std::string& name, const std::string& type, unsigned bits, unsigned count,
                          unsigned align, bool is_signed, unsigned offset) {
  Field f;
  f.name = name;
  f.type = type;
  f.bits = bits;
  f.count = count;
  f.align = align;
  f.is_signed = is_signed;
  f.offset = offset;
  return f;
}

}  // namespace eventfs::recorder
