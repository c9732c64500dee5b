// projection_bench: the record path's per-record cost, eventfs's compiled
// projection against the generic libtraceevent path, on the same records in
// the same run.
//
//   build/bench/projection_bench [--benchmark_min_time=1]
//
// Records: real sched_switch records captured at start-up from a temporary
// tracefs instance (root: sched_switch enabled for about 0.5 s while two
// threads ping-pong, drained with the mmap ring reader; the instance is always
// removed), else synthetic ones laid out as the linux-6.18 fixture says.
//
// Benchmarks (each iteration runs over every record; figures per record):
//  * Projection: ProjectionTable lookup by common_type + Projection::project
//    into the stable layout (comms, pids, task-state letter).
//  * Libtraceevent: the generic path on the same records: tep_data_type +
//    tep_find_event, then per field per record tep_find_field +
//    tep_read_number_field, and tep_get_field_raw for the comms, writing the
//    same stable layout (the state letter by a scan of the same table).
//  * ProjectionAndText: projection plus the trace_pipe text line.
//  * WalkAndProject / WalkAndLibtraceevent: the same records packed into
//    4 KiB sub-buffers, walked by SubbufParser (ring/rb_event.h) and
//    decoded each way: the whole per-record cost of the record path.
//  * Walk / KbufferWalk: the walk alone, SubbufParser's against
//    libtraceevent's kbuffer (kbuffer_next_event + kbuffer_event_size, what
//    eventfs called per record before; Debian 12 builds libtraceevent
//    without optimization).
// Per-record figures are CPU time (the machine may be shared; wall-clock is
// printed beside). RECORDS=N keeps the first N records (16384 x ~64 bytes
// fit in L2; the whole capture does not). Ends with *_ns_per_record=,
// speedup= lines and the targets (>= 10x, < 30 ns/record). A measurement: a
// missed target does not fail it.
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>
}

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catalog/parser.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "projection/text_render.h"
#include "ring/ring.h"
#include "ring/subbuf.h"
#include "tracefs/raw_event_cache.h"
#include "tracefs/tracefs.h"
#include "support/files.h"
#include "support/stream_util.h"
#include "support/synthetic.h"

namespace {

using namespace eventfs;

constexpr const char* kTracefs = "/sys/kernel/tracing";

using eventfs::testing::SubbufBuilder;

// The file's text (empty if it cannot be read).
std::string slurp(const std::string& path) {
  std::string text;
  eventfs_it::read_file(path, text);
  return text;
}

// One write(2) of `text`; true if all of it was taken.
bool write_file(const std::string& path, const std::string& text) {
  return eventfs_it::stream::write_once(path, text, O_WRONLY) == 0;
}

// Records back to back; each 8-aligned so loads behave as in a sub-buffer.
struct Records {
  std::vector<std::uint8_t> bytes;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> at;  // offset, length
  void add(const std::uint8_t* raw, std::uint32_t len) {
    std::size_t off = (bytes.size() + 7) & ~std::size_t{7};
    bytes.resize(off + len);
    std::memcpy(bytes.data() + off, raw, len);
    at.emplace_back(static_cast<std::uint32_t>(off), len);
  }
};

// The records again as ring-buffer sub-buffers (4 KiB, the kernel's event
// headers, time deltas of 1), to measure the whole walk: walk + decode.
struct Pages {
  std::vector<std::vector<std::uint8_t>> pages;
  std::size_t records = 0;
  void build(const Records& r) {
    std::optional<SubbufBuilder> page;
    auto finish = [&] {
      if (!page) return;
      pages.push_back(page->build());
      pages.back().resize(4096 + 8);  // and slack for kbuffer (BM_KbufferWalk)
      page.reset();
    };
    for (const auto& [off, len] : r.at) {
      std::size_t padded = (len + 3) & ~std::size_t{3};
      if (padded > 112) continue;  // the short form only
      if (page && page->header() + page->data_size() + 4 + padded > 4096) finish();
      if (!page) page.emplace(8, 0);
      const std::uint8_t* raw = r.bytes.data() + off;
      page->event(std::vector<std::uint8_t>(raw, raw + len), 1);
      ++records;
    }
    finish();
  }
};

// Walks every page into `sink`, as the drainer walks a sub-buffer.
void walk_pages(const Pages& pages, RingSink& sink) {
  SubbufParser parser(8);
  for (const auto& page : pages.pages) {
    if (!parser.load(page.data(), 4096)) continue;
    std::uint32_t from = 0;
    parser.walk(sink, from, 1000);
  }
}

struct CopySink : RingSink {
  Records* out;
  std::size_t max;
  void record(std::uint64_t, const std::uint8_t* raw, std::uint32_t len) override {
    if (out->at.size() < max) out->add(raw, len);
  }
  void lost(std::uint64_t, std::uint64_t, bool) override {}
};

// The temporary instance; removed by the destructor and on SIGINT/SIGTERM.
std::string g_instance;
void remove_instance() {
  if (g_instance.empty()) return;
  write_file(g_instance + "/events/sched/sched_switch/enable", "0");
  for (int i = 0; i < 50 && rmdir(g_instance.c_str()) != 0 && errno == EBUSY; ++i) usleep(20000);
  g_instance.clear();
}
void on_signal(int sig) {
  remove_instance();
  signal(sig, SIG_DFL);
  raise(sig);
}
struct InstanceGuard {
  ~InstanceGuard() { remove_instance(); }
};

// Two threads passing a token through pipes: a context switch per hop.
void ping_pong(std::atomic<bool>& stop) {
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) return;
  std::thread peer([&] {
    char c;
    while (read(a[0], &c, 1) == 1 && c) (void)!write(b[1], &c, 1);
  });
  char c = 1;
  while (!stop.load(std::memory_order_relaxed)) {
    (void)!write(a[1], &c, 1);
    (void)!read(b[0], &c, 1);
  }
  c = 0;
  (void)!write(a[1], &c, 1);
  peer.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
}

struct Setup {
  std::string source;  // where the records came from
  std::string tracefs_root;
  Catalog catalog;
  std::unique_ptr<Tracefs> tracefs;
  std::unique_ptr<RawEventCache> cache;
  std::vector<Binding> bindings;
  std::string sched_switch_format;
  Records records;
  Pages pages;
};

Setup* g_setup = nullptr;

bool capture_real(Setup& s, std::string& why) {
  if (geteuid() != 0) {
    why = "not root";
    return false;
  }
  struct stat st;
  if (stat((std::string(kTracefs) + "/instances").c_str(), &st) != 0) {
    why = "no tracefs";
    return false;
  }
  std::string path = std::string(kTracefs) + "/instances/eventfs-bench-" + std::to_string(getpid());
  if (mkdir(path.c_str(), 0755) != 0) {
    why = "mkdir " + path + ": " + std::strerror(errno);
    return false;
  }
  g_instance = path;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  InstanceGuard guard;
  s.tracefs = open_tracefs_dir(path);
  s.cache = std::make_unique<RawEventCache>(*s.tracefs);
  s.sched_switch_format = slurp(path + "/events/sched/sched_switch/format");
  Resolution r = resolve_catalog(s.catalog, [&](const RawEventName& n) { return s.cache->get(n); });
  for (auto& b : r.available)
    if (b.event->name == "sched_switch") s.bindings.push_back(std::move(b));
  if (s.bindings.empty()) {
    why = "sched_switch does not bind on this kernel";
    return false;
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<std::unique_ptr<CpuRing>> rings;
  for (long c = 0; c < ncpu; ++c) {
    if (auto ring = open_cpu_ring(RingFiles(path), static_cast<int>(c), ReaderMode::Auto)) rings.push_back(std::move(*ring));
  }
  if (!write_file(path + "/events/sched/sched_switch/enable", "1")) {
    why = "cannot enable sched_switch";
    return false;
  }
  std::atomic<bool> stop{false};
  std::thread load([&] { ping_pong(stop); });
  CopySink sink;
  sink.out = &s.records;
  // At most 16384 records (about 1 MiB): a working set that stays in the
  // cache, as the sub-buffer the daemon has just read does. (With up to
  // 400000, the count depended on the machine's activity, from 20000 to over
  // 100000, and so did the figures: from 1.5 MiB on, both paths streamed the
  // records from memory.)
  sink.max = 16384;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < end) {
    for (auto& r : rings) (void)r->drain(sink, 100000);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  load.join();
  write_file(path + "/events/sched/sched_switch/enable", "0");
  for (auto& r : rings) (void)r->drain(sink, 1000000);
  std::string modes;
  for (auto& r : rings) modes = r->mode();
  rings.clear();
  s.source = "real sched_switch records of this kernel (" + std::to_string(s.records.at.size()) +
             ", captured with the " + modes + " reader)";
  return !s.records.at.empty();
}

void synthesize(Setup& s) {
  std::string dir = std::string(EVENTFS_FIXTURES_DIR) + "/linux-6.18";
  s.tracefs = open_tracefs_dir(dir);
  s.cache = std::make_unique<RawEventCache>(*s.tracefs);
  s.sched_switch_format = slurp(dir + "/events/sched/sched_switch/format");
  Resolution r = resolve_catalog(s.catalog, [&](const RawEventName& n) { return s.cache->get(n); });
  for (auto& b : r.available)
    if (b.event->name == "sched_switch") s.bindings.push_back(std::move(b));
  const Binding& b = s.bindings.at(0);
  const char* comms[] = {"swapper/0", "bash", "kworker/u4:2", "systemd-journal", "rcu_preempt", "sshd"};
  std::uint64_t states[] = {0, 1, 2, 0x80, 0x100, 0x40};
  std::mt19937 rng(42);
  std::vector<std::uint8_t> rec(64);
  auto put = [&](const char* name, const void* v, std::size_t n) {
    const RawField* f = b.raw.field(name);
    std::memset(rec.data() + f->offset, 0, f->size);
    std::memcpy(rec.data() + f->offset, v, std::min<std::size_t>(n, f->size));
  };
  for (int i = 0; i < 100000; ++i) {
    std::fill(rec.begin(), rec.end(), 0);
    std::uint16_t type = static_cast<std::uint16_t>(b.raw.id);
    std::int32_t pid = static_cast<std::int32_t>(rng() % 5000), next = static_cast<std::int32_t>(rng() % 5000);
    std::uint64_t st = states[rng() % 6];
    const char* pc = comms[rng() % 6];
    const char* nc = comms[rng() % 6];
    put("common_type", &type, 2);
    put("common_pid", &pid, 4);
    put("prev_comm", pc, std::strlen(pc));
    put("prev_pid", &pid, 4);
    put("prev_state", &st, 8);
    put("next_comm", nc, std::strlen(nc));
    put("next_pid", &next, 4);
    s.records.add(rec.data(), 64);
  }
  s.source = "synthetic sched_switch records laid out as the linux-6.18 fixture (100000)";
}

void BM_Projection(benchmark::State& state) {
  const Setup& s = *g_setup;
  ProjectionTable table(s.bindings);
  std::vector<std::uint8_t> out(table.max_payload_size());
  const std::uint8_t* base = s.records.bytes.data();
  for (auto _ : state) {
    for (const auto& [off, len] : s.records.at) {
      const std::uint8_t* raw = base + off;
      const Projection* p = table.find_record(raw, len);
      if (p) p->project(raw, len, out.data());
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.records.at.size()));
}

struct TepPath {
  tep_handle* tep = nullptr;
  std::vector<std::pair<unsigned long long, char>> states;  // the __print_flags table
  TepPath(const Setup& s) {
    tep = tep_alloc();
    tep_set_long_size(tep, sizeof(long));
    tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
    tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
    tep_event* ev = nullptr;  // tep_parse_format() needs somewhere to put it
    tep_parse_format(tep, &ev, s.sched_switch_format.data(), s.sched_switch_format.size(), "sched");
    for (const auto& fb : s.bindings[0].fields)
      for (const auto& [v, l] : fb.states) states.emplace_back(v, l.empty() ? '?' : l[0]);
  }
  ~TepPath() { tep_free(tep); }
};

// Decodes one record the generic way into the stable layout `out`.
struct TepDecoder {
  explicit TepDecoder(const Setup& s) : t(s), L(s.bindings[0].layout), out(L.size) {}
  void decode(std::uint8_t* data, std::uint32_t len) {
    tep_record rec{};
    rec.data = data;
    rec.size = static_cast<int>(len);
    tep_event* ev = tep_find_event(t.tep, tep_data_type(t.tep, &rec));
    if (!ev) return;
    copy_comm(ev, "prev_comm", &rec, 0);
    std::int32_t prev_pid = static_cast<std::int32_t>(read_int(ev, "prev_pid", &rec));
    std::memcpy(out.data() + L.slots[1].offset, &prev_pid, 4);
    unsigned long long st = read_int(ev, "prev_state", &rec);
    char letter = 'R';
    for (const auto& [bit, l] : t.states)
      if (bit && (st & bit) == bit) {
        letter = l;
        break;
      }
    out[L.slots[2].offset] = static_cast<std::uint8_t>(letter);
    copy_comm(ev, "next_comm", &rec, 3);
    std::int32_t next_pid = static_cast<std::int32_t>(read_int(ev, "next_pid", &rec));
    std::memcpy(out.data() + L.slots[4].offset, &next_pid, 4);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  void copy_comm(tep_event* ev, const char* name, tep_record* rec, std::size_t slot) {
    int len = 0;
    const char* p = static_cast<const char*>(tep_get_field_raw(nullptr, ev, name, rec, &len, 0));
    std::uint8_t* dst = out.data() + L.slots[slot].offset;
    std::memset(dst, 0, 16);
    if (p) std::memcpy(dst, p, strnlen(p, static_cast<std::size_t>(std::min(len, 15))));
  }
  unsigned long long read_int(tep_event* ev, const char* name, tep_record* rec) {
    unsigned long long v = 0;
    if (tep_format_field* f = tep_find_field(ev, name)) tep_read_number_field(f, rec->data, &v);
    return v;
  }
  TepPath t;
  const RecordLayout& L;  // prev_comm, prev_pid, prev_state, next_comm, next_pid
  std::vector<std::uint8_t> out;
};

void BM_Libtraceevent(benchmark::State& state) {
  const Setup& s = *g_setup;
  TepDecoder d(s);
  std::uint8_t* base = const_cast<std::uint8_t*>(s.records.bytes.data());
  for (auto _ : state)
    for (const auto& [off, len] : s.records.at) d.decode(base + off, len);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.records.at.size()));
}

void BM_WalkAndLibtraceevent(benchmark::State& state) {
  const Setup& s = *g_setup;
  struct Sink : RingSink {
    TepDecoder* d;
    void record(std::uint64_t, const std::uint8_t* raw, std::uint32_t len) override {
      d->decode(const_cast<std::uint8_t*>(raw), len);
    }
    void lost(std::uint64_t, std::uint64_t, bool) override {}
  } sink;
  TepDecoder d(s);
  sink.d = &d;
  for (auto _ : state) {
    walk_pages(s.pages, sink);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.pages.records));
}

void BM_ProjectionAndText(benchmark::State& state) {
  const Setup& s = *g_setup;
  ProjectionTable table(s.bindings);
  TextFormat text = TextFormat::compile(table.projections()[0].binding());
  std::vector<std::uint8_t> out(table.max_payload_size());
  std::string line;
  line.reserve(4096);
  const std::uint8_t* base = s.records.bytes.data();
  for (auto _ : state) {
    for (const auto& [off, len] : s.records.at) {
      const std::uint8_t* raw = base + off;
      const Projection* p = table.find_record(raw, len);
      if (!p) continue;
      line.clear();
      render_raw_record(line, *p, text, 1, 123456789012ull, raw, len, out.data());
      benchmark::DoNotOptimize(line.data());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.records.at.size()));
}

// The whole record path over sub-buffers: walk, lookup, projection.
void BM_WalkAndProject(benchmark::State& state) {
  const Setup& s = *g_setup;
  ProjectionTable table(s.bindings);
  struct Sink : RingSink {
    const ProjectionTable* table;
    std::vector<std::uint8_t> out;
    void record(std::uint64_t, const std::uint8_t* raw, std::uint32_t len) override {
      if (const Projection* p = table->find_record(raw, len)) p->project(raw, len, out.data());
      benchmark::DoNotOptimize(out.data());
    }
    void lost(std::uint64_t, std::uint64_t, bool) override {}
  } sink;
  sink.table = &table;
  sink.out.resize(table.max_payload_size());
  for (auto _ : state) {
    walk_pages(s.pages, sink);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.pages.records));
}

// The same walk with the generic libtraceevent decoding.
void BM_WalkAndLibtraceevent(benchmark::State& state);

// The walk alone: each record's time stamp and length, summed.
void BM_Walk(benchmark::State& state) {
  const Setup& s = *g_setup;
  struct Sink : RingSink {
    std::uint64_t sum = 0;
    void record(std::uint64_t ts, const std::uint8_t*, std::uint32_t len) override { sum += ts + len; }
    void lost(std::uint64_t, std::uint64_t, bool) override {}
  } sink;
  for (auto _ : state) {
    walk_pages(s.pages, sink);
    benchmark::DoNotOptimize(sink.sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.pages.records));
}

// The same with kbuffer, as eventfs walked before (two calls a record).
void BM_KbufferWalk(benchmark::State& state) {
  const Setup& s = *g_setup;
  kbuffer* kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_SAME_AS_HOST);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    for (const auto& page : s.pages.pages) {
      kbuffer_load_subbuffer(kb, const_cast<std::uint8_t*>(page.data()));
      unsigned long long ts = 0;
      for (void* e = kbuffer_read_event(kb, &ts); e; e = kbuffer_next_event(kb, &ts))
        sum += ts + static_cast<std::uint64_t>(kbuffer_event_size(kb));
    }
    benchmark::DoNotOptimize(sum);
  }
  kbuffer_free(kb);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.pages.records));
}

BENCHMARK(BM_Projection)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Libtraceevent)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProjectionAndText)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WalkAndProject)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WalkAndLibtraceevent)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Walk)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KbufferWalk)->Unit(benchmark::kMillisecond);

// Keeps the console output and notes ns/record of each benchmark.
class Reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      bool walk = r.benchmark_name().find("Walk") != std::string::npos;
      double n = static_cast<double>(r.iterations) *
                 static_cast<double>(walk ? g_setup->pages.records : g_setup->records.at.size());
      cpu_ns[r.benchmark_name()] = r.cpu_accumulated_time * 1e9 / n;
      real_ns[r.benchmark_name()] = r.real_accumulated_time * 1e9 / n;
    }
  }
  using ConsoleReporter::ConsoleReporter;
  std::map<std::string, double> cpu_ns, real_ns;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Setup setup;
  if (auto parsed = parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, setup.catalog); !parsed) {
    std::fprintf(stderr, "catalog: %s\n", parsed.error().str().c_str());
    return 1;
  }
  std::string why;
  if (!capture_real(setup, why)) {
    std::fprintf(stderr, "projection_bench: no real records (%s); using synthetic ones\n", why.c_str());
    setup.bindings.clear();
    setup.records = Records{};
    synthesize(setup);
  }
  remove_instance();
  // RECORDS=N: use only the first N records (a working set that fits in cache).
  if (const char* n = std::getenv("RECORDS")) {
    std::size_t keep = std::strtoul(n, nullptr, 10);
    if (keep > 0 && keep < setup.records.at.size()) {
      setup.records.at.resize(keep);
      setup.source += ", the first " + std::to_string(keep) + " used";
    }
  }
  setup.pages.build(setup.records);
  g_setup = &setup;
  std::printf("records: %s\n", setup.source.c_str());
  Reporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Defaults
                                         : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  // CPU time: the machine may be shared; wall-clock figures are printed too.
  double ours = reporter.cpu_ns["BM_Projection"], tep = reporter.cpu_ns["BM_Libtraceevent"];
  double text = reporter.cpu_ns["BM_ProjectionAndText"];
  if (ours > 0 && tep > 0) {
    std::printf("projection_ns_per_record=%.2f (wall %.2f)\n", ours, reporter.real_ns["BM_Projection"]);
    std::printf("libtraceevent_ns_per_record=%.2f (wall %.2f)\n", tep, reporter.real_ns["BM_Libtraceevent"]);
    std::printf("projection_and_text_ns_per_record=%.2f (wall %.2f)\n", text, reporter.real_ns["BM_ProjectionAndText"]);
    double walk = reporter.cpu_ns["BM_WalkAndProject"], walk_tep = reporter.cpu_ns["BM_WalkAndLibtraceevent"];
    std::printf("walk_and_project_ns_per_record=%.2f\n", walk);
    std::printf("walk_and_libtraceevent_ns_per_record=%.2f\n", walk_tep);
    std::printf("walk_speedup=%.1fx\n", walk_tep / walk);
    std::printf("walk_ns_per_record=%.2f\n", reporter.cpu_ns["BM_Walk"]);
    std::printf("kbuffer_walk_ns_per_record=%.2f\n", reporter.cpu_ns["BM_KbufferWalk"]);
    std::printf("speedup=%.1fx\n", tep / ours);
    std::printf("targets: speedup >= 10x: %s; projection < 30 ns/record: %s\n", tep / ours >= 10 ? "met" : "MISSED",
                ours < 30 ? "met" : "MISSED");
  }
  return 0;
}
