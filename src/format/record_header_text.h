// The mount's `header` file: the framing of the binary record streams
// (include/eventfs/record.h) in the format language of <event>/format, so a
// tool can decode a stream from the mount's files alone.
#pragma once

#include <string>

namespace eventfs {

std::string record_header_text();

}  // namespace eventfs
