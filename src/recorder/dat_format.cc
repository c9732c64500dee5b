#include "recorder/dat_format.h"

#include <cctype>
#include <set>

#include <fmt/format.h>

namespace eventfs::recorder {
namespace {

// A field line as the kernel writes it.
std::string field_line(const std::string& decl, std::size_t offset, std::size_t size, bool is_signed) {
  return fmt::format("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", decl, offset, size, is_signed ? 1 : 0);
}

// The C type of an integer of `bits` bits (enum types name no C type).
std::string sized_type(unsigned bits, bool is_signed) {
  switch (bits) {
    case 8: return is_signed ? "char" : "unsigned char";
    case 16: return is_signed ? "short" : "unsigned short";
    case 32: return is_signed ? "int" : "unsigned int";
    default: return is_signed ? "s64" : "u64";
  }
}

// The field's C type as the format names it: its named type where that is
// a plain name, its size's integer type otherwise (an enum).
std::string c_type(const Field& f, bool is_enum) {
  if (is_enum || f.type.empty()) return sized_type(f.bits, f.is_signed);
  for (char c : f.type)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ' ')) return sized_type(f.bits, f.is_signed);
  return f.type;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

bool is_text(const Field& f) { return f.count != 0 && f.bits == 8 && f.type == "char"; }

// The conversion and the argument of one field in the print fmt.
std::pair<std::string, std::string> print_of(const Field& f, const NamedType* en) {
  const std::string rec = "REC->" + f.name;
  if (en) {
    std::string arg = "__print_symbolic(" + rec;
    for (const auto& [v, label] : en->map) arg += fmt::format(", {{ {}, {} }}", v, quoted(label));
    return {"%s", arg + ")"};
  }
  if (is_text(f)) return {"%s", rec};
  if (f.count != 0) return {"%s", fmt::format("__print_array({}, {}, {})", rec, f.count, f.bits / 8)};
  if (f.bits == 64) return {f.is_signed ? "%lld" : "%llu", rec};
  return {f.is_signed ? "%d" : "%u", rec};
}

}  // namespace

std::string dat_header_page(std::size_t page_size) {
  const std::size_t l = sizeof(long);
  return field_line(" u64 timestamp", 0, 8, false) + field_line(" local_t commit", 8, l, true) +
         field_line(" int overwrite", 8, 1, true) + field_line(" char data", 8 + l, page_size - 8 - l, true);
}

std::string dat_header_event() {
  return "# compressed entry header\n"
         "\ttype_len    :    5 bits\n"
         "\ttime_delta  :   27 bits\n"
         "\tarray       :   32 bits\n"
         "\n"
         "\tpadding     : type == 29\n"
         "\ttime_extend : type == 30\n"
         "\ttime_stamp : type == 31\n"
         "\tdata max type_len  == 28\n";
}

Result<std::map<std::uint32_t, std::uint16_t>> dat_event_ids(const MountLayout& layout) {
  std::map<std::uint32_t, std::uint16_t> ids;
  std::set<std::uint32_t> taken;
  for (const auto& e : layout.events)
    if (e.id != 0 && e.id <= 0xffff) {
      ids[e.id] = static_cast<std::uint16_t>(e.id);
      taken.insert(e.id);
    }
  std::uint32_t next = 0xffff;
  for (const auto& e : layout.events) {
    if (ids.count(e.id)) continue;
    while (next != 0 && taken.count(next)) --next;
    if (next == 0) return fail(EOVERFLOW, "more events than a trace.dat's 16-bit event ids can number");
    ids[e.id] = static_cast<std::uint16_t>(next);
    taken.insert(next);
  }
  return ids;
}

std::string dat_event_format(const MountLayout& layout, const Event& e, std::uint16_t id) {
  std::string out = fmt::format("name: {}\nID: {}\nformat:\n", e.name, id);
  out += field_line("unsigned short common_type", 0, 2, false);
  out += field_line("unsigned char common_flags", 2, 1, false);
  out += field_line("unsigned char common_preempt_count", 3, 1, false);
  out += field_line("int common_pid", 4, 4, true);
  out += "\n";
  std::string fmt_text, args;
  for (const auto& f : e.fields) {
    const NamedType* en = layout.enum_of(e.name, f.name);
    const std::size_t bytes = f.bits / 8 * (f.count ? f.count : 1);
    std::string decl = c_type(f, en != nullptr) + " " + f.name;
    if (f.count) decl += fmt::format("[{}]", f.count);
    out += field_line(decl, kDatCommonSize + f.offset, bytes, f.is_signed);
    auto [conv, arg] = print_of(f, en);
    fmt_text += fmt::format("{}{}={}", fmt_text.empty() ? "" : " ", f.name, conv);
    args += ", " + arg;
  }
  out += "\nprint fmt: \"" + fmt_text + "\"" + args + "\n";
  return out;
}

}  // namespace eventfs::recorder
