#include "catalog/catalog.h"

namespace eventfs {

std::vector<FormatField> StableEvent::format_fields() const {
  std::vector<FormatField> out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.push_back(f.decl);
  return out;
}

const StableEvent* Catalog::find(const std::string& name) const {
  for (const auto& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

std::uint32_t derived_event_id(const std::string& name) {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  return 0x80000000u | (h & 0x7fffffffu);
}

}  // namespace eventfs
