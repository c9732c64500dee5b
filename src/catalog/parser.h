// The catalog language (see eventfs-catalog(5)):
//
//   # comment, // comment, /* comment */
//   STABLE_EVENT(<name>, <system>:<event> [| <system>:<event> ...] [, id=<n>],
//       __field(<type>, <name>)         = <source> [| <source> ...]
//       __array(<type>, <name>, <count>) = <source> [| <source> ...]
//       __enum(<type>, <name>, <enum>)   = <source> [| <source> ...]
//   )
//
// A source is a raw field name (common fields included) or a conversion of
// one: task_state(<raw field>). __enum is a scalar integer field whose values
// are named by the enumeration <enum> (types/<enum>); its map comes from the
// raw event's print fmt: the __print_symbolic() table of the source field, or
// for task_state() the letters of its __print_flags() table. Every use of
// one enumeration has the same integer type.
#pragma once

#include <string>
#include <string_view>

#include "catalog/catalog.h"
#include "error/result.h"

namespace eventfs {

struct CatalogError {
  std::string file;
  int line = 0;  // 0: the error is about the file as a whole
  std::string message;
  std::string str() const;  // "file:line: message"
};

using CatalogResult = Result<void, CatalogError>;

// Parses `text` and appends its events to `into`. Duplicates are checked
// against what `into` already holds. On error `into` is left as it was.
CatalogResult parse_catalog(std::string_view text, const std::string& file, Catalog& into);

// A catalog file, or a directory whose *.catalog files are read in name order.
CatalogResult load_catalog(const std::string& path, Catalog& into);

// The copy compiled into the binary.
std::string_view builtin_catalog_text();
inline constexpr const char* kBuiltinCatalogName = "<builtin>/default.catalog";

}  // namespace eventfs
