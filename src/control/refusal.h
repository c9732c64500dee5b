// A refused control write as a value: the errno the write answers with, the
// line error_log shows, and where its caret goes in what the user wrote.
// Planning and applying return one; only the controller's write entry
// points log it and answer its errno.
#pragma once

#include <cerrno>
#include <cstddef>
#include <string>

#include "control/filter.h"
#include "control/kernel_writer.h"

namespace eventfs {

struct Refusal {
  int code = EINVAL;
  std::string reason;     // error_log's message
  std::size_t caret = 0;  // where its caret goes in the write
};

// Where the caret of a refusal the kernel logged goes in the user's write:
// the kernel points into the text it was given, which begins at `pos` of
// the write and, when `filter` is given, was translated from it.
inline std::size_t caret_in_write(const KernelRefusal& why, const TranslatedFilter* filter, std::size_t pos) {
  return pos + (filter ? filter->stable_pos_of(why.caret) : why.caret);
}

}  // namespace eventfs
