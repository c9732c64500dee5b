// The fixture kernels of test/fixtures, for unit tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/parser.h"
#include "projection/binding.h"
#include "tracefs/raw_event_cache.h"
#include "tracefs/tracefs.h"

namespace eventfs::testing {

const std::vector<std::string>& fixture_kernels();

std::string fixture_dir(const std::string& kernel);

// The size of a long on a fixture kernel, as its events/header_page says.
unsigned long_size_of(const std::string& kernel);

Catalog builtin_catalog();
// The built-in catalog and the events of `text` (a catalog file named `file`).
Catalog builtin_catalog_with(const std::string& text, const std::string& file);

// A catalog resolved against one fixture kernel.
struct ResolvedFixture {
  explicit ResolvedFixture(const std::string& kernel, Catalog cat = builtin_catalog());
  const Binding* binding(const std::string& name) const;
  std::string reason(const std::string& name) const;
  Catalog catalog;
  std::unique_ptr<Tracefs> tracefs;
  RawEventCache raw;
  Resolution resolution;
};

}  // namespace eventfs::testing
