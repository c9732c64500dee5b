// The Tracefs seam (tracefs/tracefs.h) over the formats a trace.dat holds:
// the catalog binds to a recording's own events exactly as the daemon binds
// it to the running kernel's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "convert/dat_header.h"
#include "tracefs/tracefs.h"

namespace eventfs::convert {

class DatTracefs : public Tracefs {
 public:
  DatTracefs(std::string path, const std::vector<DatFormat>& formats);
  const std::string& root() const override { return path_; }
  std::vector<std::string> systems() const override;
  std::vector<std::string> events(const std::string& system) const override;
  Result<std::string> read_format(const std::string& system, const std::string& event) const override;
  // A recording has the events' formats only: no control files.
  bool has_event_file(const std::string&, const std::string&, const std::string&) const override { return false; }

 private:
  std::string path_;
  std::map<std::string, std::map<std::string, std::string>> formats_;  // system -> event -> text
};

}  // namespace eventfs::convert
