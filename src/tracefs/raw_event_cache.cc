#include "tracefs/raw_event_cache.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/raw_format_parser.h"

namespace eventfs {

namespace {

Result<RawEvent> load(const Tracefs& tracefs, const RawEventName& name) {
  auto text = tracefs.read_format(name.system, name.event);
  if (!text) {
    int err = text.code();
    if (err == ENOENT || err == ENOTDIR)
      return fail(ENOENT, fmt::format("this kernel has no raw event {}:{}", name.system, name.event));
    return fail(err, fmt::format("cannot read the format of {}:{}: {}", name.system, name.event, std::strerror(err)));
  }
  auto parsed = parse_raw_format(name.system, *text);
  if (!parsed) return fail(parsed.code(), fmt::format("{}:{}: {}", name.system, name.event, parsed.reason()));
  return parsed;
}

}  // namespace

Result<const RawEvent*> RawEventCache::get(const RawEventName& name) {
  std::lock_guard lock(mu_);
  auto key = std::make_pair(name.system, name.event);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, load(tracefs_, name)).first;
  if (!it->second) return it->second.error();
  return &it->second.value();
}

}  // namespace eventfs
