#include "format/named_types.h"

#include <algorithm>

#include <fmt/format.h>

namespace eventfs {
namespace {

std::string integer_lines(const ScalarType& t) {
  return fmt::format("size = {};\nsigned = {};\nalign = {};\n", t.bits, t.is_signed ? "true" : "false", t.align);
}

// A name as a C string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void add_entry(EnumMap& map, std::int64_t value, const std::string& name) {
  for (const auto& [v, n] : map)
    if (v == value) return;
  map.emplace_back(value, name);
}

}  // namespace

EnumMap symbolic_enum_map(const FlagTable& table, const ScalarType& type) {
  EnumMap map;
  for (const auto& [raw, name] : table) {
    std::uint64_t v = raw;
    if (type.bits < 64) {
      const std::uint64_t mask = (std::uint64_t{1} << type.bits) - 1;
      v &= mask;
      if (type.is_signed && (v >> (type.bits - 1)) & 1) v |= ~mask;
    }
    add_entry(map, static_cast<std::int64_t>(v), name);
  }
  return map;
}

EnumMap task_state_enum_map(const FlagTable& states) {
  EnumMap map;
  add_entry(map, 'R', "R");
  for (const auto& [bits, letters] : states)
    if (bits != 0 && !letters.empty()) add_entry(map, static_cast<unsigned char>(letters[0]), letters);
  return map;
}

std::map<std::string, std::string> named_type_files(const std::vector<TypeUse>& uses) {
  std::map<std::string, std::string> files;
  struct Enum {
    ScalarType type;
    EnumMap map;
    std::vector<std::string> fields;
  };
  std::map<std::string, Enum> enums;
  for (const auto& u : uses) {
    files.try_emplace(u.type.name, "parent = integer;\n" + integer_lines(u.type));
    if (u.enum_name.empty()) continue;
    Enum& e = enums.try_emplace(u.enum_name, Enum{u.type, {}, {}}).first->second;
    for (const auto& [v, n] : u.map) add_entry(e.map, v, n);
    e.fields.push_back(u.event + "." + u.field);
  }
  for (const auto& [name, e] : enums) {
    std::string text = "parent = enum;\n" + integer_lines(e.type) + "map = {\n";
    for (const auto& [v, n] : e.map) text += fmt::format("\t{{ {}, {} }},\n", v, quoted(n));
    text += "};\nfields = {\n";
    for (const auto& f : e.fields) text += fmt::format("\t{},\n", f);
    text += "};\n";
    files[name] = std::move(text);
  }
  return files;
}

}  // namespace eventfs
