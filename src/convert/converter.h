// eventfs-convert's work: a trace.dat recorded by trace-cmd on any kernel,
// its formats bound to the catalog as the daemon binds them to tracefs
// (convert/dat_tracefs.h, projection/binding.h), every record of a chosen
// stable event projected into the stable layout and written by the
// recorder's outputs (a CTF directory or a trace.dat), losses included.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "convert/options.h"
#include "error/result.h"

namespace eventfs::convert {

struct ConvertSummary {
  std::uint64_t records = 0;   // records read
  std::uint64_t events = 0;    // stable records written
  std::uint64_t lost = 0;      // events lost, as the recording's pages said
  std::uint64_t skipped = 0;   // records of raw events no chosen stable event reads
  std::size_t chosen = 0;      // stable events converted
  std::string out;
};

// What the recording supplies: the stable events it can, then each other
// one with its reason (available_events, unavailable_events).
struct Availability {
  std::vector<std::string> available;
  std::vector<std::pair<std::string, std::string>> unavailable;
};

Result<Availability> list_events(const Options& o);
Result<ConvertSummary> convert(const Options& o);

}  // namespace eventfs::convert
