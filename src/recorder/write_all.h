// The recorder's one loop of write(2) until a buffer is written: retried on
// EINTR, a write of 0 taken as a full disk (ENOSPC); the reason "writing
// PATH: strerror".
#pragma once

#include <cstddef>
#include <string>

#include "error/result.h"

namespace eventfs::recorder {

Status write_all(int fd, const void* data, std::size_t size, const std::string& path);

}  // namespace eventfs::recorder
