// Parses a tracefs `format` file with libtraceevent into a RawEvent.
#pragma once

#include <string>

#include "format/raw_event.h"

namespace eventfs {

// Returns false with a one-line reason when libtraceevent cannot parse it.
bool parse_raw_format(const std::string& system, const std::string& text, RawEvent& out,
                      std::string& error);

}  // namespace eventfs
