#include "format/type_model.h"

#include <array>
#include <cstdint>
#include <type_traits>

namespace eventfs {
namespace {

struct TypeRow {
  const char* name;
  unsigned bytes;
  unsigned align;
  bool is_signed;
};

template <typename T>
constexpr TypeRow row(const char* name) {
  return {name, sizeof(T), alignof(T), std::is_signed_v<T>};
}

// C types with the sizes this compiler gives them, and the kernel's fixed
// width typedefs. Kernel typedefs that differ from glibc's (dev_t is 32 bits in
// the kernel) follow the kernel, since that is what trace events carry.
constexpr std::array kTypes{
    row<char>("char"),
    row<signed char>("signed char"),
    row<unsigned char>("unsigned char"),
    row<bool>("bool"),
    row<short>("short"),
    row<unsigned short>("unsigned short"),
    row<int>("int"),
    row<unsigned int>("unsigned int"),
    row<long>("long"),
    row<unsigned long>("unsigned long"),
    row<long long>("long long"),
    row<unsigned long long>("unsigned long long"),
    row<std::int8_t>("s8"),
    row<std::uint8_t>("u8"),
    row<std::int16_t>("s16"),
    row<std::uint16_t>("u16"),
    row<std::int32_t>("s32"),
    row<std::uint32_t>("u32"),
    row<std::int64_t>("s64"),
    row<std::uint64_t>("u64"),
    row<std::int8_t>("__s8"),
    row<std::uint8_t>("__u8"),
    row<std::int16_t>("__s16"),
    row<std::uint16_t>("__u16"),
    row<std::int32_t>("__s32"),
    row<std::uint32_t>("__u32"),
    row<std::int64_t>("__s64"),
    row<std::uint64_t>("__u64"),
    row<std::int8_t>("int8_t"),
    row<std::uint8_t>("uint8_t"),
    row<std::int16_t>("int16_t"),
    row<std::uint16_t>("uint16_t"),
    row<std::int32_t>("int32_t"),
    row<std::uint32_t>("uint32_t"),
    row<std::int64_t>("int64_t"),
    row<std::uint64_t>("uint64_t"),
    row<int>("pid_t"),
    row<std::uint32_t>("dev_t"),
    row<std::uint64_t>("sector_t"),
    row<unsigned long>("size_t"),
    row<long>("ssize_t"),
    row<long long>("loff_t"),
    row<unsigned int>("gfp_t"),
    row<unsigned long>("pgoff_t"),
};

const TypeRow* find_row(std::string_view name) {
  for (const auto& r : kTypes)
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace

std::string normalize_type_name(std::string_view name) {
  std::string out;
  bool space = false;
  for (char c : name) {
    if (c == ' ' || c == '\t' || c == '\n') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  // "short int" style spellings are folded to their short forms.
  for (std::string_view suffix : {" int"}) {
    if (out.size() > suffix.size() && out.ends_with(suffix)) {
      std::string head = out.substr(0, out.size() - suffix.size());
      if (head.ends_with("short") || head.ends_with("long")) out = head;
    }
  }
  if (out == "signed") out = "int";
  if (out == "unsigned") out = "unsigned int";
  if (out.starts_with("signed ") && out != "signed char") out = out.substr(7);
  return out;
}

std::optional<ScalarType> stable_type(std::string_view name) {
  std::string n = normalize_type_name(name);
  const TypeRow* r = find_row(n);
  if (!r) return std::nullopt;
  return ScalarType{n, r->bytes * 8, r->align, r->is_signed};
}

unsigned raw_natural_align(std::string_view type_name, unsigned bytes) {
  if (const TypeRow* r = find_row(normalize_type_name(type_name)))
    if (bytes != 0) return r->align < bytes ? r->align : bytes;
  if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return bytes;
  return 1;
}

}  // namespace eventfs
