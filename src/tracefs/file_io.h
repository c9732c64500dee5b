// Whole-file reads and single-write(2) writes of tracefs files (which report
// size 0 and parse each write as one command). A failure's reason is
// "PATH: strerror".
#pragma once

#include <string>
#include <string_view>

#include "error/result.h"

namespace eventfs {

Result<std::string> read_whole_file(const std::string& path);
// One open, one write(2) of `data` (none if empty), close. `extra_flags`
// are added to O_WRONLY (O_TRUNC, say).
Status write_once(const std::string& path, std::string_view data, int extra_flags = 0);

}  // namespace eventfs
