// Turns the chosen events on through <mount>/<event>/enable and puts back
// what each file held before, once, whatever ends the recording.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace eventfs::record {

class EventEnabler {
 public:
  explicit EventEnabler(std::string mount) : mount_(std::move(mount)) {}
  ~EventEnabler() { restore(); }
  EventEnabler(const EventEnabler&) = delete;
  EventEnabler& operator=(const EventEnabler&) = delete;

  // Writes 1 to the enable file of each event that does not read 1 already;
  // throws std::runtime_error (after restoring) when one cannot be.
  void enable(const std::vector<std::string>& events);

  // Writes the saved values back; the first failure is returned ("" if none).
  std::string restore();

 private:
  std::string mount_;
  std::vector<std::pair<std::string, std::string>> saved_;  // enable file, previous value
};

}  // namespace eventfs::record
