// The mount's `header` file: the framing of the binary record streams
// (include/eventfs/record.h) in the format language of <event>/format, so a
// tool can decode a stream from the mount's files alone.
#pragma once

#include <string>
#include <vector>

#include "format/format_text.h"

namespace eventfs {

std::string record_header_text();

// The two layouts the text describes: the record header, and the payload of
// a lost-events record.
std::vector<FormatField> record_header_fields();
std::vector<FormatField> lost_record_fields();

}  // namespace eventfs
