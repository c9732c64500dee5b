#include "projection/text_render.h"

#include <charconv>
#include <cstring>

namespace eventfs {
namespace {

inline std::uint64_t load_u(const std::uint8_t* p, unsigned size) {
  switch (size) {
    case 1: return *p;
    case 2: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

inline std::int64_t load_s(const std::uint8_t* p, unsigned size) {
  switch (size) {
    case 1: return static_cast<std::int8_t>(*p);
    case 2: { std::int16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    default: { std::int64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

template <typename T>
inline void append_num(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

inline void append_padded(std::string& out, std::uint64_t v, int width) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  int n = static_cast<int>(r.ptr - buf);
  if (n < width) out.append(static_cast<std::size_t>(width - n), '0');
  out.append(buf, static_cast<std::size_t>(n));
}

inline char printable(unsigned char c) { return (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c); }

}  // namespace

TextFormat TextFormat::compile(const Binding& b) {
  TextFormat t;
  t.name_ = b.event ? b.event->name : b.raw.name;
  t.head_ = ": " + t.name_ + ":";
  const auto& decls = b.event->fields;
  for (std::size_t i = 0; i < decls.size(); ++i) {
    const FormatField& d = decls[i].decl;
    Field f;
    f.prefix = " " + d.name + "=";
    f.size = static_cast<std::uint8_t>(d.type.bytes());
    f.offset = static_cast<std::uint16_t>(b.layout.slots[i].offset);
    bool array = d.shape == FieldShape::Array;
    f.count = static_cast<std::uint16_t>(array ? d.count : 1);
    bool is_char = d.type.bits == 8 && d.type.name == "char";
    if (array && is_char)
      f.kind = Kind::Text;
    else if (is_char)
      f.kind = Kind::Char;
    else if (array)
      f.kind = d.type.is_signed ? Kind::SignedArray : Kind::UnsignedArray;
    else
      f.kind = d.type.is_signed ? Kind::Signed : Kind::Unsigned;
    t.fields_.push_back(std::move(f));
  }
  return t;
}

void TextFormat::render(std::string& out, std::int32_t pid, unsigned cpu, std::uint64_t ts_ns,
                        const std::uint8_t* payload) const {
  append_num(out, pid);
  out += " [";
  append_padded(out, cpu, 3);
  out += "] ";
  append_num(out, ts_ns / 1000000000u);
  out += '.';
  append_padded(out, (ts_ns % 1000000000u) / 1000u, 6);
  out += head_;
  for (const Field& f : fields_) {
    out += f.prefix;
    const std::uint8_t* p = payload + f.offset;
    switch (f.kind) {
      case Kind::Signed: append_num(out, load_s(p, f.size)); break;
      case Kind::Unsigned: append_num(out, load_u(p, f.size)); break;
      case Kind::Char:
        if (*p) out += printable(*p);
        break;
      case Kind::Text:
        for (std::size_t i = 0; i < f.count && p[i]; ++i) out += printable(p[i]);
        break;
      case Kind::SignedArray:
      case Kind::UnsignedArray:
        out += '{';
        for (std::size_t i = 0; i < f.count; ++i) {
          if (i) out += ',';
          if (f.kind == Kind::SignedArray)
            append_num(out, load_s(p + i * f.size, f.size));
          else
            append_num(out, load_u(p + i * f.size, f.size));
        }
        out += '}';
        break;
    }
  }
  out += '\n';
}

void render_raw_record(std::string& out, const Projection& p, const TextFormat& f, unsigned cpu,
                       std::uint64_t ts_ns, const std::uint8_t* raw, std::uint32_t len,
                       std::uint8_t* scratch) {
  p.project(raw, len, scratch);
  f.render(out, p.pid(raw, len), cpu, ts_ns, scratch);
}

}  // namespace eventfs
