// Small text helpers of the control files' writes, shared by the controller
// and its trigger planner.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"

namespace eventfs {

// The kernel refuses a control write of a page or more.
inline constexpr std::size_t kPageSize = 4096;

// The words of `v`, one space between each.
inline std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace eventfs
