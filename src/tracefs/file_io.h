// Whole-file reads and single-write(2) writes of tracefs files (which report
// size 0 and parse each write as one command). 0 or an errno.
#pragma once

#include <string>
#include <string_view>

namespace eventfs {

int read_whole_file(const std::string& path, std::string& out);
// One open, one write(2) of `data` (none if empty), close. `extra_flags`
// are added to O_WRONLY (O_TRUNC, say).
int write_once(const std::string& path, std::string_view data, int extra_flags = 0);

}  // namespace eventfs
