#include "projection/binding.h"

#include <cerrno>
#include <optional>

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

// Can raw field `f` supply stable field `s` through `src`? How, if so.
Result<FieldBinding> bind_field(const StableField& s, const FieldSource& src, const RawEvent& raw) {
  const RawField* f = raw.field(src.raw_field);
  if (!f) return fail(ENOENT, fmt::format("{} has no field '{}'", raw_name(raw), src.raw_field));
  FieldBinding out;
  out.stable = &s;
  out.raw = *f;
  const FormatField& d = s.decl;
  if (src.kind == FieldSource::Kind::TaskState) {
    if (f->shape != FieldShape::Scalar || !integer_width(f->elem_bytes))
      return fail(EINVAL, fmt::format("task_state({}) needs an integer, {} has {}", f->name, raw_name(raw),
                                      describe_raw(*f)));
    auto it = raw.print_flags.find(f->name);
    if (it == raw.print_flags.end() || it->second.empty())
      return fail(EINVAL, fmt::format("task_state({}) needs a __print_flags() table for it in the print fmt of {}",
                                      f->name, raw_name(raw)));
    out.conversion = Conversion::TaskState;
    out.states = it->second;
    return out;
  }
  if (d.shape == FieldShape::Scalar) {
    if (f->shape == FieldShape::Scalar && integer_width(f->elem_bytes)) {
      out.conversion = Conversion::Integer;
      return out;
    }
  } else if (d.type.bits == 8) {
    if (f->shape != FieldShape::Scalar && f->elem_bytes == 1) {
      out.conversion = Conversion::Bytes;
      return out;
    }
  } else if (f->shape != FieldShape::Scalar && integer_width(f->elem_bytes)) {
    out.conversion = Conversion::IntegerArray;
    return out;
  }
  return fail(EINVAL, fmt::format("'{}' of {} is {}, which cannot supply {} {}", f->name, raw_name(raw),
                                  describe_raw(*f), describe_stable(d), d.name));
}

Result<Binding> bind_to(const StableEvent& ev, const RawEvent& raw) {
  Binding b;
  b.event = &ev;
  b.layout = layout_of(ev.format_fields());
  for (std::size_t i = 0; i < ev.fields.size(); ++i) {
    const StableField& s = ev.fields[i];
    std::optional<FieldBinding> fb;
    std::string first_why;
    for (const auto& src : s.sources) {
      auto bound = bind_field(s, src, raw);
      if (bound) {
        fb = std::move(bound).value();
        break;
      }
      if (first_why.empty()) first_why = bound.reason();
    }
    if (!fb) return fail(EINVAL, fmt::format("field {}: {}", s.decl.name, first_why));
    fb->slot = b.layout.slots[i];
    b.fields.push_back(std::move(*fb));
  }
  b.raw = raw;
  return b;
}

}  // namespace

Result<Binding> bind_stable_event(const StableEvent& ev, const RawEventLookup& lookup) {
  std::optional<Error> first;
  for (const auto& src : ev.sources) {
    auto raw = lookup(src);
    if (!raw) {
      if (!first) first = raw.error();
      continue;
    }
    auto bound = bind_to(ev, **raw);
    if (bound) return bound;
    if (!first) first = std::move(bound).error();
  }
  return first ? std::move(*first) : fail(ENOENT, "");
}

Resolution resolve_catalog(const Catalog& catalog, const RawEventLookup& lookup) {
  Resolution r;
  for (const auto& ev : catalog.events) {
    auto bound = bind_stable_event(ev, lookup);
    if (bound)
      r.available.push_back(std::move(bound).value());
    else
      r.unavailable.emplace_back(ev.name, bound.reason());
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
