// The type model: what a C type is in the format language (size in bits,
// natural alignment in bytes, signedness).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace eventfs {

struct ScalarType {
  std::string name;      // as printed after "type:"
  unsigned bits = 0;     // size of one element in bits
  unsigned align = 1;    // natural alignment in bytes on this architecture
  bool is_signed = false;

  unsigned bytes() const { return bits / 8; }
  bool operator==(const ScalarType&) const = default;
};

// A type usable in a stable declaration (char, int, pid_t, u64, ...), with
// its size and alignment on the architecture eventfs is built for.
std::optional<ScalarType> stable_type(std::string_view name);

// Canonical spelling: collapses white space ("unsigned   int" -> "unsigned int").
std::string normalize_type_name(std::string_view name);

// The natural alignment of a raw kernel field element of `bytes` bytes whose
// C type is `type_name` (known C/kernel types use their table alignment,
// capped at the element size; anything else is aligned to its size when that
// is a power of two up to 8, else 1).
unsigned raw_natural_align(std::string_view type_name, unsigned bytes);

}  // namespace eventfs
