#include "projection/text_render.h"

#include <charconv>
#include <cstring>
#include <memory>

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
inline char* put_num(char* w, T v) {
  return std::to_chars(w, w + 24, v).ptr;
}

// `v` in exactly `width` digits (v < 10^width).
inline char* put_fixed(char* w, std::uint64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    w[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return w + width;
}

inline char* put(char* w, const std::string& s) {
  std::memcpy(w, s.data(), s.size());
  return w + s.size();
}

}  // namespace

TextFormat TextFormat::compile(const Binding& b) {
  TextFormat t;
  t.name_ = b.event->name;
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
    // The longest value: 20 digits and a sign per integer, the text, braces
    // and commas.
    std::size_t longest = f.kind == Kind::Text ? f.count
                          : (f.kind == Kind::SignedArray || f.kind == Kind::UnsignedArray) ? 2 + 22u * f.count
                                                                                           : 21;
    t.max_line_ += f.prefix.size() + longest;
    t.fields_.push_back(std::move(f));
  }
  t.max_line_ += 17 + 11 + 3 + 20 + 22 + 1 + t.head_.size() + 1 + 16;  // comm-, pid, brackets, cpu, time, head, newline, spare
  return t;
}

void TextFormat::render(std::string& out, std::string_view comm, std::int32_t pid, unsigned cpu,
                        std::uint64_t ts_ns, const std::uint8_t* payload) const {
  // Formatted in a buffer of the longest line this event can have, then
  // appended at once.
  char stack[2048];
  std::unique_ptr<char[]> big;
  char* buf = stack;
  if (max_line_ > sizeof stack) {
    big.reset(new char[max_line_]);
    buf = big.get();
  }
  if (comm.empty()) comm = pid == 0 ? "<idle>" : "<...>";
  if (comm.size() > 16) comm = comm.substr(0, 16);
  char* w = buf;
  for (char c : comm) *w++ = printable_char(static_cast<std::uint8_t>(c));
  *w++ = '-';
  w = put_num(w, pid);
  *w++ = ' ';
  *w++ = '[';
  w = cpu < 1000 ? put_fixed(w, cpu, 3) : put_num(w, cpu);
  *w++ = ']';
  *w++ = ' ';
  w = put_num(w, ts_ns / 1000000000u);
  *w++ = '.';
  w = put_fixed(w, (ts_ns % 1000000000u) / 1000u, 6);
  w = put(w, head_);
  for (const Field& f : fields_) {
    w = put(w, f.prefix);
    const std::uint8_t* p = payload + f.offset;
    switch (f.kind) {
      case Kind::Signed: w = put_num(w, load_s(p, f.size)); break;
      case Kind::Unsigned: w = put_num(w, load_u(p, f.size)); break;
      case Kind::Char:
        if (*p) *w++ = printable_char(*p);
        break;
      case Kind::Text:
        for (std::size_t i = 0; i < f.count && p[i]; ++i) *w++ = printable_char(p[i]);
        break;
      case Kind::SignedArray:
      case Kind::UnsignedArray:
        *w++ = '{';
        for (std::size_t i = 0; i < f.count; ++i) {
          if (i) *w++ = ',';
          if (f.kind == Kind::SignedArray)
            w = put_num(w, load_s(p + i * f.size, f.size));
          else
            w = put_num(w, load_u(p + i * f.size, f.size));
        }
        *w++ = '}';
        break;
    }
  }
  *w++ = '\n';
  out.append(buf, static_cast<std::size_t>(w - buf));
}

void render_raw_record(std::string& out, const Projection& p, const TextFormat& f, unsigned cpu,
                       std::uint64_t ts_ns, const std::uint8_t* raw, std::uint32_t len,
                       std::uint8_t* scratch) {
  p.project(raw, len, scratch);
  f.render(out, {}, p.pid(raw, len), cpu, ts_ns, scratch);
}

}  // namespace eventfs
