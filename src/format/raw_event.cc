#include "format/raw_event.h"

#include "format/type_model.h"

namespace eventfs {

const RawField* RawEvent::field(const std::string& n) const {
  for (const auto& f : fields)
    if (f.name == n) return &f;
  for (const auto& f : common_fields)
    if (f.name == n) return &f;
  return nullptr;
}

std::vector<FormatField> raw_format_fields(const RawEvent& ev) {
  std::vector<FormatField> out;
  out.reserve(ev.fields.size());
  for (const auto& f : ev.fields) {
    FormatField ff;
    ff.name = f.name;
    ff.type.name = f.is_pointer ? f.elem_type : normalize_type_name(f.elem_type);
    ff.type.bits = f.elem_bytes * 8;
    ff.type.align = raw_natural_align(f.elem_type, f.elem_bytes);
    ff.type.is_signed = f.is_signed;
    ff.shape = f.shape;
    ff.count = f.count;
    ff.loc = f.loc;
    out.push_back(std::move(ff));
  }
  return out;
}

}  // namespace eventfs
