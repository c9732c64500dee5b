// A raw event of eventfs's instance by its two names, and the forms the
// controller writes them in: its directory in the instance (the key of its
// lock and of what was applied to it) and "system/event" in messages.
#pragma once

#include <string>

namespace eventfs {

struct EventName {
  std::string system, event;

  std::string dir() const { return "events/" + system + "/" + event; }
  std::string shown() const { return system + "/" + event; }
  bool operator==(const EventName&) const = default;
};

}  // namespace eventfs
