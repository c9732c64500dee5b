#include "tracefs/raw_event_cache.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/raw_format_parser.h"

namespace eventfs {

const RawEvent* RawEventCache::get(const RawEventName& name, std::string& why) {
  std::lock_guard lock(mu_);
  auto key = std::make_pair(name.system, name.event);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry e;
    std::string text;
    int err = tracefs_.read_format(name.system, name.event, text);
    if (err == ENOENT || err == ENOTDIR)
      e.why = fmt::format("this kernel has no raw event {}:{}", name.system, name.event);
    else if (err)
      e.why = fmt::format("cannot read the format of {}:{}: {}", name.system, name.event,
                          std::strerror(err));
    else if (parse_raw_format(name.system, text, e.event, e.why))
      e.ok = true;
    else
      e.why = fmt::format("{}:{}: {}", name.system, name.event, e.why);
    it = cache_.emplace(key, std::move(e)).first;
  }
  why = it->second.why;
  return it->second.ok ? &it->second.event : nullptr;
}

}  // namespace eventfs
