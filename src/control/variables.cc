#include "control/variables.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "control/trigger.h"

namespace eventfs {
namespace {

bool kernel_field_name(std::string_view n) {
  return n.rfind("common_", 0) == 0 || n == "CPU" || n == "COMM" || n == "cpu" || n == "comm";
}

bool parse_value(std::string_view v, std::int64_t& out) {
  if (v.empty() || v.size() > 24) return false;
  std::string s(v);
  const char* p = s.c_str();
  bool negative = *p == '-';
  if (negative) ++p;
  // Decimal, or hex after 0x: a leading 0 is a decimal digit (not octal).
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
    if (!std::isxdigit(static_cast<unsigned char>(*p))) return false;
  } else if (!std::isdigit(static_cast<unsigned char>(*p))) {
    return false;
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long u = std::strtoull(p, &end, base);
  if (errno || *end) return false;
  if (negative) {
    if (u > static_cast<unsigned long long>(INT64_MAX) + 1) return false;
    out = u == static_cast<unsigned long long>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<std::int64_t>(u);
  } else {
    if (u > static_cast<unsigned long long>(INT64_MAX)) return false;
    out = static_cast<std::int64_t>(u);
  }
  return true;
}

}  // namespace

std::string variable_name_problem(std::string_view name, const std::set<std::string>& reserved) {
  if (name.empty()) return "Missing variable name";
  if (name.size() > kMaxVariableName)
    return fmt::format("Variable name too long ({} bytes; the limit is {})", name.size(), kMaxVariableName);
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_')
    return "Invalid variable name: a letter or '_' comes first";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return "Invalid variable name: letters, digits and '_' only";
  if (kernel_field_name(name)) return fmt::format("'{}' is a field of every event, not a variable name", name);
  std::string n(name);
  if (reserved.count(n)) return fmt::format("'{}' is a field name, not a variable name", name);
  const auto& cmds = known_trigger_commands();
  if (n == "if" || n == "save" || std::find(cmds.begin(), cmds.end(), n) != cmds.end())
    return fmt::format("'{}' is a keyword, not a variable name", name);
  return {};
}

Result<std::vector<VariableChange>, VariableError> parse_variable_changes(std::string_view text,
                                                                          const std::set<std::string>& reserved) {
  std::vector<VariableChange> out;
  std::size_t line_start = 0;
  while (line_start <= text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::size_t b = line_start, e = line_end;
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    if (b < e) {
      for (std::size_t i = b; i < e; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\t') || c == 0x7f) return VariableError{"Invalid character", i};
      }
      std::string_view line = text.substr(b, e - b);
      VariableChange c;
      c.pos = b;
      std::size_t name_pos = b;
      std::string_view name = line;
      if (line[0] == '!') {
        c.kind = VariableChange::Kind::Remove;
        name = line.substr(1);
        ++name_pos;
      } else if (auto eq = line.find('='); eq != std::string_view::npos) {
        c.kind = VariableChange::Kind::Set;
        name = line.substr(0, eq);
        while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
        std::string_view value = line.substr(eq + 1);
        std::size_t vpos = b + eq + 1;
        while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) {
          value.remove_prefix(1);
          ++vpos;
        }
        std::int64_t v;
        if (!parse_value(value, v))
          return VariableError{"Invalid value: a 64-bit integer (decimal, or hex with 0x) is expected", vpos};
        c.value = v;
      } else {
        c.kind = VariableChange::Kind::Declare;
      }
      if (std::string why = variable_name_problem(name, reserved); !why.empty()) return VariableError{why, name_pos};
      c.name = std::string(name);
      out.push_back(std::move(c));
    }
    if (line_end == text.size()) break;
    line_start = line_end + 1;
  }
  if (out.empty()) return VariableError{"Empty write: NAME=VALUE sets a variable, NAME declares one, !NAME removes one", 0};
  return out;
}

std::string variable_value_text(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : "unset";
}

std::string variables_text(const VariableValues& values) {
  std::string out;
  for (const auto& [name, v] : values) out += v ? fmt::format("{}={}\n", name, *v) : name + " unset\n";
  return out;
}

std::int64_t integer_from_bytes(const std::uint8_t* p, std::size_t size, bool is_signed) {
  switch (size) {
    case 1: {
      std::uint8_t u = p[0];
      return is_signed ? static_cast<std::int8_t>(u) : u;
    }
    case 2: {
      std::uint16_t u;
      std::memcpy(&u, p, 2);
      return is_signed ? static_cast<std::int16_t>(u) : u;
    }
    case 4: {
      std::uint32_t u;
      std::memcpy(&u, p, 4);
      return is_signed ? static_cast<std::int32_t>(u) : static_cast<std::int64_t>(u);
    }
    default: {
      std::uint64_t u;
      std::memcpy(&u, p, 8);
      return static_cast<std::int64_t>(u);
    }
  }
}

}  // namespace eventfs
