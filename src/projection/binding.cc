#include "projection/binding.h"

#include <fmt/format.h>

namespace eventfs {
namespace {

std::string raw_name(const RawEvent& ev) { return ev.system + ":" + ev.name; }

std::string describe_raw(const RawField& f) {
  switch (f.shape) {
    case FieldShape::Scalar: return fmt::format("a {}-byte {}", f.elem_bytes, f.elem_type);
    case FieldShape::Array: return fmt::format("an array {}[{}]", f.elem_type, f.count);
    case FieldShape::DynArray:
      return fmt::format("a dynamic array ({}) of {}", dyn_loc_name(f.loc), f.elem_type);
  }
  return "?";
}

std::string describe_stable(const FormatField& d) {
  if (d.shape == FieldShape::Array) return fmt::format("{}[{}]", d.type.name, d.count);
  return d.type.name;
}

bool integer_width(unsigned bytes) { return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8; }

// Can raw field `f` supply stable field `s` through `src`? Fills `out` if so.
bool bind_field(const StableField& s, const FieldSource& src, const RawEvent& raw,
                FieldBinding& out, std::string& why) {
  const RawField* f = raw.field(src.raw_field);
  if (!f) {
    why = fmt::format("{} has no field '{}'", raw_name(raw), src.raw_field);
    return false;
  }
  out.stable = &s;
  out.raw = *f;
  const FormatField& d = s.decl;
  if (src.kind == FieldSource::Kind::TaskState) {
    if (f->shape != FieldShape::Scalar || !integer_width(f->elem_bytes)) {
      why = fmt::format("task_state({}) needs an integer, {} has {}", f->name, raw_name(raw),
                        describe_raw(*f));
      return false;
    }
    auto it = raw.print_flags.find(f->name);
    if (it == raw.print_flags.end() || it->second.empty()) {
      why = fmt::format("task_state({}) needs a __print_flags() table for it in the print fmt of {}",
                        f->name, raw_name(raw));
      return false;
    }
    out.conversion = Conversion::TaskState;
    out.states = it->second;
    return true;
  }
  if (d.shape == FieldShape::Scalar) {
    if (f->shape == FieldShape::Scalar && integer_width(f->elem_bytes)) {
      out.conversion = Conversion::Integer;
      return true;
    }
  } else if (d.type.bits == 8) {
    if (f->shape != FieldShape::Scalar && f->elem_bytes == 1) {
      out.conversion = Conversion::Bytes;
      return true;
    }
  } else if (f->shape != FieldShape::Scalar && integer_width(f->elem_bytes)) {
    out.conversion = Conversion::IntegerArray;
    return true;
  }
  why = fmt::format("'{}' of {} is {}, which cannot supply {} {}", f->name, raw_name(raw),
                    describe_raw(*f), describe_stable(d), d.name);
  return false;
}

bool bind_to(const StableEvent& ev, const RawEvent& raw, Binding& out, std::string& reason) {
  Binding b;
  b.event = &ev;
  b.layout = layout_of(ev.format_fields());
  for (std::size_t i = 0; i < ev.fields.size(); ++i) {
    const StableField& s = ev.fields[i];
    FieldBinding fb;
    std::string why, first_why;
    bool ok = false;
    for (const auto& src : s.sources) {
      if ((ok = bind_field(s, src, raw, fb, why))) break;
      if (first_why.empty()) first_why = why;
    }
    if (!ok) {
      reason = fmt::format("field {}: {}", s.decl.name, first_why);
      return false;
    }
    fb.slot = b.layout.slots[i];
    b.fields.push_back(std::move(fb));
  }
  b.raw = raw;
  out = std::move(b);
  return true;
}

}  // namespace

bool bind_stable_event(const StableEvent& ev, const RawEventLookup& lookup, Binding& out,
                       std::string& reason) {
  std::string first_reason;
  for (const auto& src : ev.sources) {
    std::string why;
    const RawEvent* raw = lookup(src, why);
    if (raw && bind_to(ev, *raw, out, why)) return true;
    if (first_reason.empty()) first_reason = why;
  }
  reason = first_reason;
  return false;
}

Resolution resolve_catalog(const Catalog& catalog, const RawEventLookup& lookup) {
  Resolution r;
  for (const auto& ev : catalog.events) {
    Binding b;
    std::string reason;
    if (bind_stable_event(ev, lookup, b, reason))
      r.available.push_back(std::move(b));
    else
      r.unavailable.emplace_back(ev.name, reason);
  }
  return r;
}

std::vector<TypeUse> type_uses(const Resolution& resolution) {
  std::vector<TypeUse> uses;
  for (const auto& b : resolution.available) {
    for (const auto& fb : b.fields) {
      const StableField& s = *fb.stable;
      TypeUse u{b.event->name, s.decl.name, s.decl.type, s.enum_name, {}};
      if (!s.enum_name.empty()) {
        if (fb.conversion == Conversion::TaskState) {
          u.map = task_state_enum_map(fb.states);
        } else if (auto it = b.raw.print_symbols.find(fb.raw.name); it != b.raw.print_symbols.end()) {
          u.map = symbolic_enum_map(it->second, s.decl.type);
        }
      }
      uses.push_back(std::move(u));
    }
  }
  return uses;
}

}  // namespace eventfs
