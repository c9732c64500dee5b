// Parses a tracefs `format` file with libtraceevent into a RawEvent.
#pragma once

#include <string>

#include "error/result.h"
#include "format/raw_event.h"

namespace eventfs {

// The event, or EINVAL with a one-line reason when libtraceevent cannot parse it.
Result<RawEvent> parse_raw_format(const std::string& system, const std::string& text);

}  // namespace eventfs
