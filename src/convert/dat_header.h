// The header of a trace.dat (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)):
// what eventfs-convert needs to bind the catalog to the recording's own
// formats, read as the documented format lays it out (libtracecmd's
// installed API gives parsed events, not their format text). Version 7's
// sections may be compressed with zstd or zlib; numbers are in the file's
// byte order. Bounded: a section or a text larger than its limit is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error/result.h"

namespace eventfs::convert {

struct DatFormat {
  std::string system, event, text;
};

struct DatHeader {
  int version = 0;
  bool big_endian = false;
  unsigned long_size = 8;
  std::uint32_t page_size = 0;
  std::string header_page, header_event;
  std::vector<DatFormat> formats;  // ftrace's own (system "ftrace") and the events'
  std::string trace_clock;         // the selected clock, "" if the file names none
  int cpus = 0;                    // CPUs with data
};

// Reads the header of the trace.dat at `path`; EINVAL with a reason naming
// the file and what is wrong where it is not one this reads.
Result<DatHeader> read_dat_header(const std::string& path);

// The same from the file's `size` bytes (`what` names it in reasons).
Result<DatHeader> parse_dat_header(const unsigned char* bytes, std::size_t size, const std::string& what);

}  // namespace eventfs::convert
