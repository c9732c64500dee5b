#include "format/format_text.h"

#include <fmt/format.h>

namespace eventfs {

const char* dyn_loc_name(DynLoc loc) {
  switch (loc) {
    case DynLoc::DataLoc: return "data_loc";
    case DynLoc::RelLoc: return "rel_loc";
    case DynLoc::Tail: return "tail";
  }
  return "?";
}

std::string render_format_line(const FormatField& f) {
  const ScalarType& t = f.type;
  switch (f.shape) {
    case FieldShape::Scalar:
      return fmt::format("\tfield:{}\ttype:{}\tsize:{}\talign:{}\tsigned:{};\n", f.name, t.name,
                         t.bits, t.align, t.is_signed ? 1 : 0);
    case FieldShape::Array:
      return fmt::format("\tarray:{}\ttype:{}\tsize:{}\tcount:{}\talign:{}\tsigned:{};\n", f.name,
                         t.name, t.bits, f.count, t.align, t.is_signed ? 1 : 0);
    case FieldShape::DynArray:
      return fmt::format("\tdynarray:{}\ttype:{}\tsize:{}\tloc:{}\talign:{}\tsigned:{};\n", f.name,
                         t.name, t.bits, dyn_loc_name(f.loc), t.align, t.is_signed ? 1 : 0);
  }
  return {};
}

std::string render_format(const std::vector<FormatField>& fields) {
  std::string out;
  for (const auto& f : fields) out += render_format_line(f);
  return out;
}

}  // namespace eventfs
