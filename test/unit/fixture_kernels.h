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

inline const std::vector<std::string>& fixture_kernels() {
  static const std::vector<std::string> k = {"linux-2.6.36", "linux-6.18", "linux-32bit-alt"};
  return k;
}

inline std::string fixture_dir(const std::string& kernel) {
  return std::string(EVENTFS_FIXTURES_DIR) + "/" + kernel;
}

inline Catalog builtin_catalog() {
  Catalog c;
  if (auto parsed = parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, c); !parsed)
    throw std::runtime_error(parsed.error().str());
  return c;
}

// A catalog resolved against one fixture kernel.
struct ResolvedFixture {
  explicit ResolvedFixture(const std::string& kernel, Catalog cat = builtin_catalog())
      : catalog(std::move(cat)), tracefs(open_tracefs_dir(fixture_dir(kernel))), raw(*tracefs) {
    resolution = resolve_catalog(catalog, [this](const RawEventName& n) { return raw.get(n); });
  }
  const Binding* binding(const std::string& name) const {
    for (const auto& b : resolution.available)
      if (b.event->name == name) return &b;
    return nullptr;
  }
  std::string reason(const std::string& name) const {
    for (const auto& [n, r] : resolution.unavailable)
      if (n == name) return r;
    return {};
  }
  Catalog catalog;
  std::unique_ptr<Tracefs> tracefs;
  RawEventCache raw;
  Resolution resolution;
};

}  // namespace eventfs::testing
