// The fixture kernels of test/fixtures (see fixture_kernels.h).
#include "support/fixture_kernels.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ring/subbuf.h"

namespace eventfs::testing {

const std::vector<std::string>& fixture_kernels() {
  static const std::vector<std::string> k = {"linux-2.6.36", "linux-6.18", "linux-32bit-alt"};
  return k;
}

std::string fixture_dir(const std::string& kernel) {
  return std::string(EVENTFS_FIXTURES_DIR) + "/" + kernel;
}

unsigned long_size_of(const std::string& kernel) {
  std::ifstream in(fixture_dir(kernel) + "/events/header_page");
  std::stringstream s;
  s << in.rdbuf();
  return header_page_long_size(s.str());
}

Catalog builtin_catalog() {
  Catalog c;
  if (auto parsed = parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, c); !parsed)
    throw std::runtime_error(parsed.error().str());
  return c;
}

Catalog builtin_catalog_with(const std::string& text, const std::string& file) {
  Catalog c = builtin_catalog();
  if (auto parsed = parse_catalog(text, file, c); !parsed) throw std::runtime_error(parsed.error().str());
  return c;
}

ResolvedFixture::ResolvedFixture(const std::string& kernel, Catalog cat)
    : catalog(std::move(cat)), tracefs(open_tracefs_dir(fixture_dir(kernel))), raw(*tracefs) {
  resolution = resolve_catalog(catalog, [this](const RawEventName& n) { return raw.get(n); });
}

const Binding* ResolvedFixture::binding(const std::string& name) const {
  for (const auto& b : resolution.available)
    if (b.event->name == name) return &b;
  return nullptr;
}

std::string ResolvedFixture::reason(const std::string& name) const {
  for (const auto& [n, r] : resolution.unavailable)
    if (n == name) return r;
  return {};
}

}  // namespace eventfs::testing
