#include "format/stable_layout.h"

namespace eventfs {
namespace {
std::size_t round_up(std::size_t v, std::size_t a) { return a ? (v + a - 1) / a * a : v; }
}  // namespace

RecordLayout layout_of(const std::vector<FormatField>& fields) {
  RecordLayout l;
  std::size_t at = 0;
  for (const auto& f : fields) {
    std::size_t align = f.type.align ? f.type.align : 1;
    std::size_t size = f.type.bytes() * (f.shape == FieldShape::Array ? f.count : 1);
    at = round_up(at, align);
    l.slots.push_back({at, size});
    at += size;
    if (align > l.align) l.align = align;
  }
  l.size = round_up(at, l.align);
  return l;
}

}  // namespace eventfs
