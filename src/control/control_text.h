// Small text helpers of the control files' writes, shared by the controller
// and its trigger planner.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace eventfs {

// The kernel refuses a control write of a page or more.
inline constexpr std::size_t kPageSize = 4096;

// `s` without the white space around it.
inline std::string trimmed(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// The words of `v`, one space between each.
inline std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace eventfs
