// Fuzzes the catalog language end to end: parse_catalog() on the input's
// text, the binding of what it declares to the raw events of each fixture
// kernel (resolve_catalog), and, for every stable event that binds, its
// compiled projection and its text line run over a raw record made of the
// input's bytes.
//
// Input: catalog text (any bytes), then optionally a line "#record" and the
// raw record's bytes. Without that line the text's own bytes are the record.
//
// Checked besides the sanitizers: a refused catalog leaves the catalog it was
// parsed into as it was; every event is either bound or has a reason; the
// fast projection writes every payload byte and agrees with the checked one;
// a framed record has its documented size and zero padding; a text line is
// exactly one line of printable bytes; every types/ file is printable lines,
// one per type of a bound field and one per enumeration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <eventfs/record.h>

#include "support/fixture_kernels.h"
#include "catalog/parser.h"
#include "format/named_types.h"
#include "format/stable_layout.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "projection/text_render.h"

namespace eventfs {
namespace {

// Bounds the work per input: a catalog this long declares a few hundred
// events at most, each of at most 64 KiB.
constexpr std::size_t kMaxInput = 16 * 1024;
// Compiling and running projections costs time in proportion to the stable
// records' sizes (compiling looks at each payload byte, slowly under the
// sanitizers): a catalog whose events add up to more is only parsed, so
// that no input takes more than about half a second.
constexpr std::size_t kMaxPayloadBytes = 256 * 1024;
// Where the catalog text ends and the record begins (a comment line in the
// catalog language, which a catalog may well hold: it is cut there).
constexpr std::string_view kRecordMark = "\n#record\n";

#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// One fixture kernel, its raw events parsed once. Lookups of events the
// fixture does not have never reach the cache: it keeps every name it is
// asked for, and the fuzzer would make it grow without end.
struct Kernel {
  explicit Kernel(const std::string& name) : fx(name) {
    for (const auto& sys : fx.tracefs->systems())
      for (const auto& ev : fx.tracefs->events(sys)) {
        if (fx.raw.get({sys, ev})) present.emplace(sys, ev);
      }
    FUZZ_CHECK(!present.empty());
  }
  Result<const RawEvent*> lookup(const RawEventName& n) {
    if (!present.count({n.system, n.event}))
      return fail(ENOENT, "this kernel has no raw event " + n.system + ":" + n.event);
    return fx.raw.get(n);
  }
  testing::ResolvedFixture fx;
  std::set<std::pair<std::string, std::string>> present;
};

std::vector<std::unique_ptr<Kernel>>& kernels() {
  static std::vector<std::unique_ptr<Kernel>> k = [] {
    std::vector<std::unique_ptr<Kernel>> v;
    for (const auto& name : testing::fixture_kernels()) v.push_back(std::make_unique<Kernel>(name));
    return v;
  }();
  return k;
}

const Catalog& builtin() {
  static const Catalog c = testing::builtin_catalog();
  return c;
}

void check_line(const std::string& line, const std::string& event) {
  FUZZ_CHECK(!line.empty() && line.back() == '\n');
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    FUZZ_CHECK(c >= 0x20 && c != 0x7f);
  }
  FUZZ_CHECK(line.find(": " + event + ":") != std::string::npos);
}

// Projects and renders `rec` (exactly `len` readable bytes) with one binding.
// types/ of what bound: a file per type and per enumeration, nothing else,
// each made of printable lines.
void check_named_types(const Resolution& res) {
  const std::vector<TypeUse> uses = type_uses(res);
  const auto files = named_type_files(uses);
  std::set<std::string> names;
  for (const auto& u : uses) {
    names.insert(u.type.name);
    if (!u.enum_name.empty()) names.insert(u.enum_name);
  }
  FUZZ_CHECK(files.size() == names.size());
  for (const auto& [name, text] : files) {
    FUZZ_CHECK(names.count(name) == 1);
    FUZZ_CHECK(!text.empty() && text.back() == '\n');
    for (char c : text) FUZZ_CHECK(c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f));
  }
}

void exercise(const Binding& b, const std::uint8_t* rec, std::uint32_t len, std::uint64_t ts) {
  FUZZ_CHECK(b.event && b.fields.size() == b.event->fields.size());
  const Projection p = Projection::compile(b);
  FUZZ_CHECK(p.payload_size() == b.layout.size);
  FUZZ_CHECK(record_size(p) <= EVENTFS_RECORD_MAX_SIZE);
  const std::size_t n = p.payload_size();
  // Two fills: a byte project() leaves alone keeps its fill and shows as a
  // difference in one of the two comparisons.
  std::vector<std::uint8_t> checked(n, 0x5a), fast_a(n, 0xa5), fast_b(n, 0x00);
  p.project_checked(rec, len, checked.data());
  p.project(rec, len, fast_a.data());
  p.project(rec, len, fast_b.data());
  FUZZ_CHECK(fast_a == checked);
  FUZZ_CHECK(fast_b == checked);

  std::vector<std::uint8_t> framed(record_size(p), 0xee);
  const std::uint32_t wrote = write_record(p, ts, rec, len, framed.data());
  FUZZ_CHECK(wrote == framed.size());
  eventfs_record_header h;
  std::memcpy(&h, framed.data(), sizeof h);
  FUZZ_CHECK(h.size == wrote && h.id == b.event->id && h.timestamp == ts);
  FUZZ_CHECK(std::memcmp(framed.data() + sizeof h, checked.data(), n) == 0);
  for (std::size_t i = sizeof h + n; i < framed.size(); ++i) FUZZ_CHECK(framed[i] == 0);

  const TextFormat f = TextFormat::compile(b);
  FUZZ_CHECK(f.event_name() == b.event->name);
  std::vector<std::uint8_t> scratch(n);
  std::string line;
  const unsigned cpu = static_cast<unsigned>(ts % 1200);  // past 999 too: wider than three digits
  render_raw_record(line, p, f, cpu, ts, rec, len, scratch.data());
  check_line(line, b.event->name);
}

}  // namespace
}  // namespace eventfs

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace eventfs;
  if (size > kMaxInput) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t mark = input.find(kRecordMark);
  const std::string_view text = input.substr(0, mark);
  // The record in a buffer of its own exact size, so that a read past its
  // end is a reported overflow (one byte for an empty record: a real one is
  // never at a null address).
  const std::uint8_t* rec_begin = mark == std::string_view::npos ? data : data + mark + kRecordMark.size();
  const std::size_t rec_len = static_cast<std::size_t>(data + size - rec_begin);
  std::unique_ptr<std::uint8_t[]> rec(new std::uint8_t[rec_len ? rec_len : 1]);
  if (rec_len) std::memcpy(rec.get(), rec_begin, rec_len);
  std::uint64_t ts = 0;
  std::memcpy(&ts, rec.get(), std::min<std::size_t>(rec_len, 8));

  Catalog cat;
  if (auto parsed = parse_catalog(text, "fuzz.catalog", cat); !parsed) {
    const CatalogError& err = parsed.error();
    FUZZ_CHECK(cat.events.empty());
    FUZZ_CHECK(!err.message.empty() && err.line >= 0);
    FUZZ_CHECK(!err.str().empty());
    return 0;
  }
  // Parsed again after the builtin catalog: the same events, or a refusal
  // (a duplicate) that leaves the builtin ones as they were.
  Catalog merged = builtin();
  if (parse_catalog(text, "fuzz.catalog", merged))
    FUZZ_CHECK(merged.events.size() == builtin().events.size() + cat.events.size());
  else
    FUZZ_CHECK(merged.events.size() == builtin().events.size());

  std::size_t payload = 0;
  for (const auto& ev : cat.events) payload += layout_of(ev.format_fields()).size;
  if (payload > kMaxPayloadBytes) return 0;

  for (auto& k : kernels()) {
    const Resolution res =
        resolve_catalog(cat, [&k](const RawEventName& n) { return k->lookup(n); });
    FUZZ_CHECK(res.available.size() + res.unavailable.size() == cat.events.size());
    for (const auto& [name, reason] : res.unavailable) FUZZ_CHECK(!name.empty() && !reason.empty());
    for (const Binding& b : res.available) exercise(b, rec.get(), static_cast<std::uint32_t>(rec_len), ts);
    check_named_types(res);

    // The raw id -> projection table: every projection is found by its raw
    // id, first or down the chain of those sharing it.
    const ProjectionTable table(res.available);
    for (const Projection& p : table.projections()) {
      bool found = false;
      for (const Projection* q = table.find(p.raw_id()); q && !found; q = table.next_same_raw(*q)) found = q == &p;
      FUZZ_CHECK(found);
      FUZZ_CHECK(p.payload_size() <= table.max_payload_size());
    }
    for (const Projection* q = table.find_record(rec.get(), static_cast<std::uint32_t>(rec_len)); q;
         q = table.next_same_raw(*q)) {
      std::vector<std::uint8_t> out(record_size(*q));
      write_record(*q, ts, rec.get(), static_cast<std::uint32_t>(rec_len), out.data());
    }
  }
  return 0;
}
