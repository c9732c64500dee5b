// A trace.dat of version 6 (trace-cmd.dat.v6(5)): the file header (little
// or big endian as the host, its long and the pages' size), header_page and
// header_event, no ftrace formats, the stable events' formats under one
// system, empty kallsyms and printk formats, the saved cmdlines, options
// (the trace clock, uname, the recorder's version), then per CPU the offset
// and size of its pages, which follow page-aligned, copied from the files
// the CPUs' writers filled. Version 6 and no compression: trace-cmd 3.1.6
// reads it whole, and a page stays what the kernel's readers walk.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "error/result.h"

namespace eventfs::recorder {

struct DatContents {
  std::size_t page_size = 4096;
  std::vector<std::string> formats;  // the events' format texts (dat_format.h)
  std::string cmdlines;              // "pid comm\n" lines
  std::string trace_clock;           // as tracefs's trace_clock shows it: "[local] global ..."
  std::string uname;
  std::string version;               // of the program that recorded it
  // Per CPU from 0 on, the file of its pages (empty: no data for that CPU).
  std::vector<std::string> cpu_files;
};

// Writes the trace.dat at `path` (made new: it must not exist). The CPUs'
// files are left where they are.
Status write_trace_dat(const std::string& path, const DatContents& c);

}  // namespace eventfs::recorder
