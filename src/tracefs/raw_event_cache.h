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
  // The event, or why not: ENOENT when the kernel has no such event, else
  // the format could not be read or parsed. Failures are kept too.
  Result<const RawEvent*> get(const RawEventName& name);

 private:
  using Entry = Result<RawEvent>;
  const Tracefs& tracefs_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> cache_;
};

}  // namespace eventfs
