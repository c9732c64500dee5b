#include "recorder/task_names.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace eventfs::recorder {

TaskNames::TaskNames(const MountLayout& layout) {
  for (const auto& e : layout.events) {
    auto field = [&](const std::string& name) -> const Field* {
      for (const auto& f : e.fields)
        if (f.name == name) return &f;
      return nullptr;
    };
    std::vector<Pair> pairs;
    for (const auto& f : e.fields) {
      if (f.count == 0 || f.bits != 8 || f.type != "char") continue;
      std::string prefix;
      if (f.name == "comm") prefix = "";
      else if (f.name.size() > 5 && f.name.compare(f.name.size() - 5, 5, "_comm") == 0)
        prefix = f.name.substr(0, f.name.size() - 4);
      else continue;
      const Field* pid = field(prefix + "pid");
      if (pid && (pid->bits != 32 || pid->count != 0)) continue;
      if (!pid && !prefix.empty()) continue;
      pairs.push_back({f.offset, f.count, pid ? static_cast<int>(pid->offset) : -1});
    }
    if (!pairs.empty()) pairs_[e.id] = std::move(pairs);
  }
}

void TaskNames::note(std::uint32_t id, std::int32_t pid, const unsigned char* payload, std::size_t size) {
  auto it = pairs_.find(id);
  if (it == pairs_.end()) return;
  for (const Pair& p : it->second) {
    if (p.comm + p.comm_len > size || (p.pid >= 0 && static_cast<std::size_t>(p.pid) + 4 > size)) continue;
    std::int32_t who = pid;
    if (p.pid >= 0) std::memcpy(&who, payload + p.pid, 4);
    const char* c = reinterpret_cast<const char*>(payload + p.comm);
    const std::size_t len = ::strnlen(c, p.comm_len);
    if (len == 0) continue;
    std::string& name = names_[who];
    if (name.size() != len || name.compare(0, len, c, len) != 0) name.assign(c, len);
  }
}

void TaskNames::merge(const TaskNames& other) {
  for (const auto& [pid, name] : other.names_) names_[pid] = name;
}

std::string TaskNames::cmdlines() const {
  std::map<std::int32_t, const std::string*> sorted;
  for (const auto& [pid, name] : names_) sorted[pid] = &name;
  std::string out;
  for (const auto& [pid, name] : sorted) out += fmt::format("{} {}\n", pid, *name);
  return out;
}

}  // namespace eventfs::recorder
