// Turns the chosen events on through <mount>/<event>/enable and puts back
// what each file held before, once, whatever ends the recording.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "error/result.h"

namespace eventfs::record {

class EventEnabler {
 public:
  explicit EventEnabler(std::string mount) : mount_(std::move(mount)) {}
  ~EventEnabler() { (void)restore(); }
  EventEnabler(const EventEnabler&) = delete;
  EventEnabler& operator=(const EventEnabler&) = delete;

  // Writes 1 to the enable file of each event that does not read 1 already.
  // When one cannot be, what was changed is put back and the error returned.
  Status enable(const std::vector<std::string>& events);

  // Writes the saved values back; the first failure is returned.
  Status restore();

 private:
  // Turns one event on, noting what its enable file held.
  Status enable_one(const std::string& event);

  std::string mount_;
  std::vector<std::pair<std::string, std::string>> saved_;  // enable file, previous value
};

}  // namespace eventfs::record
