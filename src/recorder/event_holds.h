// The recording's enables: a hold on each chosen event, taken by writing
// "hold" to <mount>/<event>/enable through an open file of its own (see
// eventfs(5)). The event stays on while that file is open and goes off with
// it, whatever ends the recorder (kill -9 included), unless another hold or
// a plain enable keeps it on: two recorders, or a user's own "echo 1", never
// switch each other's events off.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "error/result.h"

namespace eventfs::recorder {

class EventHolds {
 public:
  explicit EventHolds(std::string mount) : mount_(std::move(mount)) {}
  ~EventHolds() { release(); }
  EventHolds(const EventHolds&) = delete;
  EventHolds& operator=(const EventHolds&) = delete;

  // Holds each event (its descriptor close-on-exec: a command run for the
  // recording does not inherit it). When one cannot be held, the holds
  // taken are released and the error (with eventfs's error_log line) returned.
  Status hold(const std::vector<std::string>& events);

  // Closes the descriptors: each hold ends.
  void release();

  std::size_t held() const { return fds_.size(); }

 private:
  Status hold_one(const std::string& event);

  std::string mount_;
  std::vector<int> fds_;
};

}  // namespace eventfs::recorder
