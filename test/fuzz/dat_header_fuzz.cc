// libFuzzer target: eventfs-convert's reader of a trace.dat's header
// (convert/dat_header.h), versions 6 and 7 with compressed sections, on any
// bytes: a result or one line, never a crash, a read past the input or an
// allocation past the reader's limits.
#include <cstddef>
#include <cstdint>

#include "convert/dat_header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto h = eventfs::convert::parse_dat_header(data, size, "fuzz.dat");
  if (!h && h.reason().find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
