#include "convert/converter.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "catalog/parser.h"
#include "convert/dat_header.h"
#include "convert/dat_tracefs.h"
#include "convert/tracecmd_records.h"
#include "format/format_text.h"
#include "format/named_types.h"
#include "format/record_header_text.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "recorder/mount_layout.h"
#include "recorder/recording_output.h"
#include "tracefs/raw_event_cache.h"

namespace eventfs::convert {
namespace {

// The recording read and the catalog bound to its formats.
struct Bound {
  DatHeader header;
  Catalog catalog;
  std::unique_ptr<DatTracefs> tracefs;
  std::unique_ptr<RawEventCache> raw;
  Resolution resolution;
};

Result<std::unique_ptr<Bound>> bind(const Options& o) {
  auto b = std::make_unique<Bound>();
  auto header = read_dat_header(o.input);
  if (!header) return std::move(header).error();
  b->header = std::move(header).value();
  CatalogResult c = o.catalog.empty()
                        ? parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, b->catalog)
                        : load_catalog(o.catalog, b->catalog);
  if (!c) return fail(EINVAL, c.error().str());
  b->tracefs = std::make_unique<DatTracefs>(o.input, b->header.formats);
  b->raw = std::make_unique<RawEventCache>(*b->tracefs);
  RawEventCache& raw = *b->raw;
  b->resolution = resolve_catalog(b->catalog, [&raw](const RawEventName& n) { return raw.get(n); });
  return b;
}

// The chosen bindings: those the patterns match (each must match one the
// recording supplies), or all.
Result<std::vector<Binding>> choose(const Options& o, const Resolution& r) {
  std::vector<Binding> out;
  std::vector<bool> taken(r.available.size(), o.events.empty());
  for (const auto& p : o.events) {
    bool any = false;
    for (std::size_t i = 0; i < r.available.size(); ++i)
      if (::fnmatch(p.c_str(), r.available[i].event->name.c_str(), 0) == 0) taken[i] = any = true;
    if (any) continue;
    for (const auto& [name, reason] : r.unavailable)
      if (name == p) return fail(ENOENT, fmt::format("{}: the recording cannot supply it: {}", p, reason));
    return fail(ENOENT, fmt::format("no stable event {} '{}' in the catalog",
                                    p.find_first_of("*?[") != std::string::npos ? "matches" : "is", p));
  }
  for (std::size_t i = 0; i < r.available.size(); ++i)
    if (taken[i]) out.push_back(r.available[i]);
  if (out.empty()) return fail(ENOENT, "the recording supplies no stable event of the catalog (see -l)");
  return out;
}

// The layout the recorder's outputs write: the same format and types texts
// a mount over this recording would show, read by the recorder's parsers.
Result<recorder::MountLayout> layout_of(const Options& o, const Bound& b, const std::vector<Binding>& chosen) {
  recorder::MountLayout l;
  l.mount = o.input;
  std::vector<TypeUse> uses = type_uses(b.resolution);
  for (const auto& fields : {record_header_fields(), lost_record_fields()})
    for (const auto& f : fields) uses.push_back({"header", f.name, f.type, "", {}});
  for (const auto& [name, text] : named_type_files(uses)) {
    auto t = recorder::parse_named_type(name, text, "types/" + name);
    if (!t) return std::move(t).error();
    l.types.emplace(name, std::move(t).value());
  }
  for (const auto& bd : chosen) {
    recorder::Event e;
    e.name = bd.event->name;
    e.id = bd.event->id;
    auto fields = recorder::parse_format(render_format(bd.event->format_fields()), e.name + "/format", &e.size, &e.end,
                                         &e.align);
    if (!fields) return std::move(fields).error();
    e.fields = std::move(fields).value();
    l.available.push_back(e.name);
    l.events.push_back(std::move(e));
  }
  l.clock = b.header.trace_clock.empty() ? "local" : b.header.trace_clock;
  auto decl = recorder::declare_clock(l.clock, ::sysconf(_SC_CLK_TCK), o.input);
  if (!decl) return std::move(decl).error();
  l.clock_decl = *decl;
  for (int cpu = 0; cpu < b.header.cpus; ++cpu) l.cpus.push_back(cpu);
  return l;
}

bool host_is_big_endian() {
  const std::uint16_t one = 1;
  unsigned char first;
  __builtin_memcpy(&first, &one, 1);
  return first == 0;
}

// Each record of the walk, projected and handed to its CPU's sink.
struct Walk {
  const ProjectionTable* table = nullptr;
  recorder::RecordingOutput* output = nullptr;
  const recorder::MountLayout* layout = nullptr;
  std::map<std::uint32_t, std::pair<unsigned, unsigned>> ends;  // stable id -> end, align
  std::map<int, std::unique_ptr<recorder::CpuSink>> sinks;
  std::vector<std::uint8_t> payload;
  ConvertSummary summary;
  std::optional<Error> error;

  recorder::CpuSink* sink(int cpu) {
    auto it = sinks.find(cpu);
    if (it != sinks.end()) return it->second.get();
    auto s = output->open_cpu(cpu, std::max<std::size_t>(layout->cpus.size(), 1));
    if (!s) {
      error = std::move(s).error();
      return nullptr;
    }
    return (sinks[cpu] = std::move(s).value()).get();
  }

  int take(const eventfs_dat_record& r) {
    ++summary.records;
    recorder::CpuSink* s = sink(r.cpu);
    if (!s) return 1;
    if (r.missed != 0) {
      const std::uint64_t count = r.missed > 0 ? static_cast<std::uint64_t>(r.missed) : 0;
      if (Status st = s->add_lost(r.ts, count); !st) return stop(std::move(st).error());
      summary.lost += count;
    }
    const Projection* p = table->find_record(r.data, r.size);
    if (!p) ++summary.skipped;
    for (; p; p = table->next_same_raw(*p)) {
      payload.assign(p->payload_size() + 8, 0);
      p->project(r.data, r.size, payload.data());
      const auto& [end, align] = ends.at(p->stable_id());
      if (Status st = s->add_event(r.ts, p->stable_id(), p->pid(r.data, r.size), payload.data(), p->payload_size(),
                                   end, align);
          !st)
        return stop(std::move(st).error());
      ++summary.events;
    }
    return 0;
  }
  int stop(Error e) {
    error = std::move(e);
    return 1;
  }
};

}  // namespace

Result<Availability> list_events(const Options& o) {
  auto b = bind(o);
  if (!b) return std::move(b).error();
  Availability a;
  for (const auto& bd : (*b)->resolution.available) a.available.push_back(bd.event->name);
  std::sort(a.available.begin(), a.available.end());
  a.unavailable = (*b)->resolution.unavailable;
  return a;
}

Result<ConvertSummary> convert(const Options& o) {
  auto b = bind(o);
  if (!b) return std::move(b).error();
  auto chosen = choose(o, (*b)->resolution);
  if (!chosen) return std::move(chosen).error();
  auto layout = layout_of(o, **b, *chosen);
  if (!layout) return std::move(layout).error();
  recorder::Options ro;
  ro.out_dir = o.out;
  ro.format = o.format;
  auto output = recorder::make_output(ro, *layout);
  if (Status s = output->prepare(); !s) return std::move(s).error();
  // A recording has no reading of the real time: the clock's zero is left at
  // the epoch.
  if (Status s = output->started(recorder::ClockOffset{}); !s) return std::move(s).error();

  ProjectionTable table(*chosen);
  Walk w;
  w.table = &table;
  w.output = output.get();
  w.layout = &*layout;
  for (const auto& e : layout->events) w.ends[e.id] = {e.end, e.align};
  w.summary.chosen = chosen->size();
  const int walked = eventfs_dat_walk(
      o.input.c_str(), (*b)->header.big_endian != host_is_big_endian(),
      [](const eventfs_dat_record* r, void* data) { return static_cast<Walk*>(data)->take(*r); }, &w);
  Status first;
  if (w.error) first = *w.error;
  else if (walked < 0) first = fail(EIO, fmt::format("libtracecmd cannot read the records of {}", o.input));
  for (auto& [cpu, sink] : w.sinks)
    if (Status s = sink->finish(); !s && first) first = std::move(s);
  if (Status s = output->finish(); !s && first) first = std::move(s);
  if (!first) return std::move(first).error();
  w.summary.out = output->path();
  return w.summary;
}

}  // namespace eventfs::convert
