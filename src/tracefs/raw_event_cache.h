// Raw events parsed from tracefs on demand, kept for the life of the cache.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "catalog/catalog.h"
#include "format/raw_event.h"
#include "tracefs/tracefs.h"

namespace eventfs {

class RawEventCache {
 public:
  explicit RawEventCache(const Tracefs& tracefs) : tracefs_(tracefs) {}
  // nullptr with a reason when the kernel has no such event or its format
  // cannot be parsed.
  const RawEvent* get(const RawEventName& name, std::string& why);

 private:
  struct Entry {
    bool ok = false;
    RawEvent event;
    std::string why;
  };
  const Tracefs& tracefs_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> cache_;
};

}  // namespace eventfs
