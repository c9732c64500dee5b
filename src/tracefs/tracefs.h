// Everything eventfs reads from (and later writes to) the kernel's tracing
// filesystem goes through this interface, so the whole daemon can run over a
// plain directory of format files in tests (-o tracefs=DIR).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "error/result.h"

namespace eventfs {

class Tracefs {
 public:
  virtual ~Tracefs() = default;

  // Where it is: the tracefs mount point, or the fixture directory.
  virtual const std::string& root() const = 0;
  // Event systems (directories under events/), sorted.
  virtual std::vector<std::string> systems() const = 0;
  // Events of one system, sorted; empty if the system does not exist.
  virtual std::vector<std::string> events(const std::string& system) const = 0;
  // The text of events/<system>/<event>/format (ENOENT: no such event).
  virtual Result<std::string> read_format(const std::string& system, const std::string& event) const = 0;
  // Whether events/<system>/<event>/<file> exists (ftrace's own events, say,
  // have no enable or filter).
  virtual bool has_event_file(const std::string& system, const std::string& event,
                              const std::string& file) const = 0;
};

// A tracefs (or a copy of its layout) rooted at `dir`.
std::unique_ptr<Tracefs> open_tracefs_dir(const std::string& dir);

}  // namespace eventfs
