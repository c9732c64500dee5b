// Text helpers of any layer's parsers (no eventfs type).
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace eventfs {

// `s` without the white space around it.
inline std::string trimmed(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace eventfs
