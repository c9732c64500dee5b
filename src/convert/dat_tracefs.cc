#include "convert/dat_tracefs.h"

#include <cerrno>

#include <fmt/format.h>

namespace eventfs::convert {

DatTracefs::DatTracefs(std::string path, const std::vector<DatFormat>& formats) : path_(std::move(path)) {
  for (const auto& f : formats)
    if (!f.event.empty()) formats_[f.system][f.event] = f.text;
}

std::vector<std::string> DatTracefs::systems() const {
  std::vector<std::string> out;
  for (const auto& [s, _] : formats_) out.push_back(s);
  return out;
}

std::vector<std::string> DatTracefs::events(const std::string& system) const {
  std::vector<std::string> out;
  auto it = formats_.find(system);
  if (it != formats_.end())
    for (const auto& [e, _] : it->second) out.push_back(e);
  return out;
}

Result<std::string> DatTracefs::read_format(const std::string& system, const std::string& event) const {
  auto s = formats_.find(system);
  if (s != formats_.end())
    if (auto e = s->second.find(event); e != s->second.end()) return e->second;
  return fail(ENOENT, fmt::format("{} holds no format of {}:{}", path_, system, event));
}

}  // namespace eventfs::convert
