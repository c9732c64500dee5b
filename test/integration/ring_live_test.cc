// The ring readers against the running kernel (root only): a private tracefs
// instance, markers written to its trace_marker from one CPU, drained with
// both reader modes and checked against libtraceevent's own parsing.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern "C" {
#include <traceevent/event-parse.h>
}

#include "catalog/parser.h"
#include "projection/binding.h"
#include "projection/projection.h"
#include "projection/text_render.h"
#include "ring/rb_event.h"
#include "ring/ring.h"
#include "ring/subbuf.h"
#include "ring/trace_mmap_abi.h"
#include "support/files.h"
#include "support/kernel_features.h"
#include "support/stream_util.h"
#include "support/synthetic.h"
#include "support/walk_compare.h"
#include "tracefs/raw_event_cache.h"
#include "tracefs/tracefs.h"

namespace eventfs {
namespace {

using testing::CollectSink;

constexpr const char* kTracefs = "/sys/kernel/tracing";

using eventfs_it::kernel_maps_rings;
using eventfs_it::reader_in_use;
using eventfs_it::slurp;

// One write(2) of `text`; true if all of it was taken.
bool write_file(const std::string& path, const std::string& text) { return eventfs_it::stream::write_once(path, text) == 0; }

// A tracefs instance of our own, removed however the test ends.
// The reader modes this kernel has: read(2) on every kernel, the mapping
// from Linux 6.10 (MmapWorksFromLinux610AndSaysWhyNotBefore checks that
// asking for it before says why it cannot be had).
std::vector<ReaderMode> kernel_modes() {
  if (kernel_maps_rings()) return {ReaderMode::Mmap, ReaderMode::Read};
  return {ReaderMode::Read};
}

class LiveRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    struct stat st;
    if (stat((std::string(kTracefs) + "/instances").c_str(), &st) != 0) GTEST_SKIP() << "no tracefs at " << kTracefs;
    remove_stale_instances();
    name_ = "eventfs-ringtest-" + std::to_string(getpid());
    path_ = std::string(kTracefs) + "/instances/" + name_;
    if (mkdir(path_.c_str(), 0755) != 0) GTEST_SKIP() << "cannot create " << path_ << ": " << std::strerror(errno);
    made_ = true;
    // Pin to one CPU so every marker lands in its ring.
    cpu_set_t old;
    CPU_ZERO(&old);
    sched_getaffinity(0, sizeof old, &old);
    saved_affinity_ = old;
    cpu_ = CPU_COUNT(&old) > 1 && CPU_ISSET(1, &old) ? 1 : 0;
    for (int c = 0; c < CPU_SETSIZE && !CPU_ISSET(cpu_, &old); ++c) cpu_ = c + 1;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    pinned_ = true;
    marker_fd_ = ::open((path_ + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(marker_fd_, 0);
  }

  void TearDown() override {
    if (marker_fd_ >= 0) ::close(marker_fd_);
    if (pinned_) sched_setaffinity(0, sizeof saved_affinity_, &saved_affinity_);
    if (made_) {
      // rmdir fails with EBUSY while a file of the instance is open.
      for (int i = 0; i < 50 && rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      struct stat st;
      EXPECT_NE(stat(path_.c_str(), &st), 0) << "could not remove " << path_;
    }
  }

  // Instances of earlier runs that died before their TearDown (a crash).
  static void remove_stale_instances() {
    std::string dir = std::string(kTracefs) + "/instances";
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      const std::string prefix = "eventfs-ringtest-";
      if (n.rfind(prefix, 0) != 0) continue;
      pid_t pid = static_cast<pid_t>(std::atoi(n.c_str() + prefix.size()));
      if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) continue;  // its test is still running
      rmdir((dir + "/" + n).c_str());
    }
    closedir(d);
  }

  void mark(const std::string& text) {
    ASSERT_EQ(::write(marker_fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  // The test instance's ring of the test's CPU, in read mode.
  void open_read_ring(std::unique_ptr<CpuRing>& ring) {
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, ReaderMode::Read);
    ASSERT_TRUE(opened) << opened.reason();
    ring = std::move(*opened);
  }

  // Drains until the ring says nothing more is there.
  static void drain_all(CpuRing& r, CollectSink& sink) {
    for (int i = 0; i < 100000; ++i) {
      std::size_t before = sink.items.size();
      Result<std::size_t> drained = r.drain(sink, 64);
      ASSERT_TRUE(drained) << drained.reason();
      if (sink.items.size() == before) return;
    }
    FAIL() << "drain never ran dry";
  }

  std::string name_, path_;
  bool made_ = false, pinned_ = false;
  cpu_set_t saved_affinity_;
  int cpu_ = 0;
  int marker_fd_ = -1;
};

// The marker text of a print record: its buf, to the NUL.
std::string print_buf(const std::vector<std::uint8_t>& raw, unsigned buf_off) {
  if (raw.size() <= buf_off) return {};
  const char* s = reinterpret_cast<const char*>(raw.data() + buf_off);
  return std::string(s, strnlen(s, raw.size() - buf_off));
}

void check_markers(const CollectSink& sink, const std::string& prefix, int n) {
  int next = 0;
  for (const auto& item : sink.items) {
    ASSERT_FALSE(item.lost) << "lost " << item.count << " events";
    std::string buf = print_buf(item.raw, 16);
    if (buf.rfind(prefix, 0) != 0) continue;
    ASSERT_EQ(buf, prefix + std::to_string(next) + "\n");
    ++next;
  }
  EXPECT_EQ(next, n);
}

TEST_F(LiveRingTest, BothModesDeliverEveryMarkerOnceInOrder) {
  for (ReaderMode mode : kernel_modes()) {
    SCOPED_TRACE(reader_mode_name(mode));
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, mode);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    EXPECT_STREQ(ring->mode(), mode == ReaderMode::Mmap ? "mmap" : "read");
    std::string prefix = std::string("eventfs-ringtest ") + reader_mode_name(mode) + " ";
    CollectSink sink;
    int n = 0;
    // Some before the first drain, some while it is under way (the writer
    // then appends to the reader sub-buffer), many more (several sub-buffers).
    for (; n < 10; ++n) mark(prefix + std::to_string(n));
    Result<std::size_t> drained = ring->drain(sink, 3);
    ASSERT_TRUE(drained) << drained.reason();
    for (; n < 20; ++n) mark(prefix + std::to_string(n));
    drain_all(*ring, sink);
    for (; n < 25; ++n) mark(prefix + std::to_string(n));
    drain_all(*ring, sink);
    for (; n < 3000; ++n) mark(prefix + std::to_string(n));
    drain_all(*ring, sink);
    check_markers(sink, prefix, n);
    RingStats s = ring->stats();
    EXPECT_EQ(s.entries, sink.items.size());
    EXPECT_EQ(s.lost, 0u);
    EXPECT_EQ(s.overrun, 0u);
    EXPECT_GT(s.subbufs, 3u);
    // Time stamps never go backwards on one CPU.
    for (std::size_t i = 1; i < sink.items.size(); ++i) ASSERT_LE(sink.items[i - 1].ts, sink.items[i].ts);
  }
}

// ring.h: in read mode, the sub-buffers the writer has left come many a
// splice(2) call; the one it is on by read(2). Nothing is lost or reordered
// between the two.
TEST_F(LiveRingTest, ReadModeSplicesTheSubBuffersTheWriterLeftManyAtATime) {
  std::unique_ptr<CpuRing> ring;
  ASSERT_NO_FATAL_FAILURE(open_read_ring(ring));
  const std::string prefix = "eventfs-ringtest splice ";
  CollectSink sink;
  int n = 0;
  // Dozens of sub-buffers wait before the first drain; then a few records
  // at a time, read at the writer's heels (read(2) of its sub-buffer),
  // then dozens again.
  for (; n < 3000; ++n) mark(prefix + std::to_string(n));
  drain_all(*ring, sink);
  const RingStats first = ring->stats();
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 5; ++i, ++n) mark(prefix + std::to_string(n));
    drain_all(*ring, sink);
  }
  for (; n < 6000; ++n) mark(prefix + std::to_string(n));
  drain_all(*ring, sink);
  check_markers(sink, prefix, n);
  const RingStats s = ring->stats();
  EXPECT_EQ(s.entries, sink.items.size());
  EXPECT_EQ(s.lost, 0u);
  // The first drain: every sub-buffer but the writer's (and the rest of it
  // once the writer left it) spliced, at least 4 a call.
  EXPECT_GE(first.subbufs, 20u);
  EXPECT_GE(first.spliced + 2, first.subbufs);
  EXPECT_GE(first.spliced, 4 * first.splices);
  EXPECT_GT(first.splices, 0u);
  EXPECT_LE(s.spliced, s.subbufs);
  EXPECT_GT(s.spliced, first.spliced);
}

// A drain that returns less than it was asked for leaves nothing behind
// that the kernel no longer announces: in read mode, no spliced sub-buffer
// waits unwalked (settled()). Here the first sub-buffer spliced after two
// catch-ups on the writer's page is the short rest of that page (Linux 6.1
// and later splice it; before, read(2) takes it).
TEST_F(LiveRingTest, ReadModeDeliversTheWholeSplicedBatchAfterTheRestOfAPageReadBefore) {
  std::unique_ptr<CpuRing> ring;
  ASSERT_NO_FATAL_FAILURE(open_read_ring(ring));
  const std::string prefix = "eventfs-ringtest rest ";
  CollectSink sink;
  int n = 0;
  for (; n < 40; ++n) mark(prefix + std::to_string(n));  // most of one sub-buffer
  drain_all(*ring, sink);
  for (; n < 45; ++n) mark(prefix + std::to_string(n));
  drain_all(*ring, sink);
  EXPECT_EQ(ring->stats().spliced, 0u) << "the writer's sub-buffer was spliced";
  for (; n < 3000; ++n) mark(prefix + std::to_string(n));
  constexpr std::size_t kMax = 1000000;
  int drains = 0;
  for (std::size_t before = sink.items.size(); drains < 10; ++drains, before = sink.items.size()) {
    Result<std::size_t> got = ring->drain(sink, kMax);
    ASSERT_TRUE(got) << got.reason();
    EXPECT_TRUE(ring->settled()) << "drain " << drains << " returned " << *got << " records, spliced ones left behind";
    if (sink.items.size() == before) break;
  }
  check_markers(sink, prefix, n);
  // The rest of the page read before, then the sub-buffers after it (two
  // drains where the kernel reads that rest with read(2)), then nothing.
  EXPECT_LE(drains, 3);
  EXPECT_GT(ring->stats().spliced, 0u);
}

// eventfs(8): auto reads with read(2), the mapping's GET_READER costing more
// on every kernel that has it.
TEST_F(LiveRingTest, AutoReadsWithRead) {
  auto opened = open_cpu_ring(RingFiles(path_), cpu_, ReaderMode::Auto);
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  EXPECT_EQ(std::string(ring->mode()), reader_in_use("auto"));
  EXPECT_EQ(ring->cpu(), cpu_);
  EXPECT_GT(ring->subbuf_size(), 0u);
}

// eventfs(8): the mapping is Linux 6.10's; before, opening a ring with
// reader=mmap fails and says so.
TEST_F(LiveRingTest, MmapWorksFromLinux610AndSaysWhyNotBefore) {
  auto opened = open_cpu_ring(RingFiles(path_), cpu_, ReaderMode::Mmap);
  if (kernel_maps_rings()) {
    ASSERT_TRUE(opened) << opened.reason();
    EXPECT_STREQ((*opened)->mode(), "mmap");
  } else {
    ASSERT_FALSE(opened) << "a kernel before 6.10 mapped trace_pipe_raw";
    EXPECT_NE(opened.reason().find("trace_pipe_raw: "), std::string::npos) << opened.reason();
    EXPECT_NE(opened.reason().find("(the kernel maps trace_pipe_raw from Linux 6.10)"), std::string::npos)
        << opened.reason();
  }
}

TEST_F(LiveRingTest, OpeningAloneConsumesNothing) {
  for (int i = 0; i < 5; ++i) mark("untouched " + std::to_string(i));
  for (ReaderMode mode : kernel_modes()) {
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, mode);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
  }
  auto opened = open_cpu_ring(RingFiles(path_), cpu_, kernel_modes().front());
  ASSERT_TRUE(opened) << opened.reason();
  auto ring = std::move(*opened);
  CollectSink sink;
  drain_all(*ring, sink);
  check_markers(sink, "untouched ", 5);
}

TEST_F(LiveRingTest, OverwrittenEventsAreReportedLost) {
  // The smallest ring, overwritten many times between reads.
  ASSERT_TRUE(eventfs_it::stream::ResizesRings(path_, "8"));
  for (ReaderMode mode : kernel_modes()) {
    SCOPED_TRACE(reader_mode_name(mode));
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, mode);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    std::string prefix = std::string("lossy ") + reader_mode_name(mode) + " ";
    const int rounds = 3, per_round = 5000, n = rounds * per_round;
    CollectSink sink;
    // Round 0's records fill sub-buffers exactly (no room for the kernel to
    // store the lost count); later rounds vary in length (room for it).
    for (int r = 0, i = 0; r < rounds; ++r) {
      for (int j = 0; j < per_round; ++j, ++i) mark(prefix + std::to_string(i) + std::string(r ? i % 5 : 0, ' '));
      drain_all(*ring, sink);
    }
    RingStats s = ring->stats();
    std::uint64_t got = 0, lost = 0, lost_here = 0;
    int last = -1;
    for (const auto& item : sink.items) {
      if (item.lost) {
        lost += item.count;
        lost_here += item.count;
        continue;
      }
      std::string buf = print_buf(item.raw, 16);
      if (buf.rfind(prefix, 0) != 0) continue;
      int v = std::stoi(buf.substr(prefix.size()));  // stoi stops at the padding
      ASSERT_GT(v, last);
      // A gap is announced by lost reports right before it, as large as it.
      if (last >= 0 && v != last + 1) {
        EXPECT_EQ(lost_here, static_cast<std::uint64_t>(v - last - 1)) << v;
      }
      lost_here = 0;
      last = v;
      ++got;
    }
    std::printf("  [lossy %s] %d markers: delivered %llu, lost %llu in %llu reports (%llu unknown-count marks), "
                "overrun counter +%llu, %llu sub-buffers\n",
                reader_mode_name(mode), n, static_cast<unsigned long long>(got), static_cast<unsigned long long>(lost),
                static_cast<unsigned long long>(s.lost_reports), static_cast<unsigned long long>(s.unknown_lost),
                static_cast<unsigned long long>(s.overrun), static_cast<unsigned long long>(s.subbufs));
    EXPECT_EQ(last, n - 1);  // the newest survive
    EXPECT_LT(got, static_cast<std::uint64_t>(n));
    EXPECT_EQ(s.lost, lost);
    // Every marker is either delivered or counted lost.
    EXPECT_EQ(got + lost, static_cast<std::uint64_t>(n));
  }
}

// Decoded fields match libtraceevent's reading of the same raw records.
TEST_F(LiveRingTest, ProjectionAgreesWithLibtraceevent) {
  Catalog cat;
  auto parsed = parse_catalog("STABLE_EVENT(marker, ftrace:print, id=100,\n"
                              "  __field(u64, ip) = ip\n  __array(char, buf, 64) = buf\n)\n",
                              "live-test", cat);
  ASSERT_TRUE(parsed) << parsed.error().str();
  auto tfs = open_tracefs_dir(path_);
  RawEventCache cache(*tfs);
  auto bound = bind_stable_event(cat.events[0], [&](const RawEventName& n) { return cache.get(n); });
  ASSERT_TRUE(bound) << bound.reason();
  std::vector<Binding> bindings{*bound};  // outlives the table
  ProjectionTable table(bindings);
  const Projection& proj = table.projections()[0];
  TextFormat text = TextFormat::compile(table.projections()[0].binding());

  tep_handle* tep = tep_alloc();
  ASSERT_NE(tep, nullptr);
  tep_set_long_size(tep, sizeof(long));
  tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
  std::string fmt = slurp(path_ + "/events/ftrace/print/format");
  tep_event* ev = nullptr;
  ASSERT_EQ(tep_parse_format(tep, &ev, fmt.data(), fmt.size(), "ftrace"), TEP_ERRNO__SUCCESS);
  tep_format_field* ip_f = tep_find_field(ev, "ip");
  tep_format_field* buf_f = tep_find_field(ev, "buf");
  ASSERT_TRUE(ip_f && buf_f);

  for (ReaderMode mode : kernel_modes()) {
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, mode);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    for (int i = 0; i < 40; ++i) mark(std::string(i, 'a' + i % 26) + " " + std::to_string(i));
    CollectSink sink;
    drain_all(*ring, sink);
    ASSERT_EQ(sink.items.size(), 40u);
    std::vector<std::uint8_t> out(proj.payload_size());
    std::string line;
    for (auto& item : sink.items) {
      ASSERT_EQ(table.find_record(item.raw.data(), static_cast<std::uint32_t>(item.raw.size())), &proj);
      proj.project(item.raw.data(), static_cast<std::uint32_t>(item.raw.size()), out.data());
      tep_record rec{};
      rec.data = item.raw.data();
      rec.size = static_cast<int>(item.raw.size());
      rec.ts = item.ts;
      EXPECT_EQ(tep_data_type(tep, &rec), ev->id);
      EXPECT_EQ(tep_data_pid(tep, &rec), proj.pid(item.raw.data(), static_cast<std::uint32_t>(item.raw.size())));
      EXPECT_EQ(tep_data_pid(tep, &rec), getpid());
      unsigned long long ip = 0;
      ASSERT_EQ(tep_read_number_field(ip_f, rec.data, &ip), 0);
      std::uint64_t our_ip;
      std::memcpy(&our_ip, out.data(), 8);
      EXPECT_EQ(our_ip, ip);
      int len = 0;
      auto* raw_buf = static_cast<const char*>(tep_get_field_raw(nullptr, ev, "buf", &rec, &len, 0));
      ASSERT_NE(raw_buf, nullptr);
      // A tail array (char buf[]) has size 0 in the format: libtraceevent
      // then gives len 0 and the data runs to the end of the record.
      if (len == 0) len = rec.size - buf_f->offset;
      std::string want(raw_buf, strnlen(raw_buf, static_cast<std::size_t>(len)));
      want = want.substr(0, 63);
      std::string got(reinterpret_cast<const char*>(out.data() + 8), 64);
      EXPECT_EQ(got, want + std::string(64 - want.size(), '\0'));
      line.clear();
      text.render(line, {}, proj.pid(rec.data ? item.raw.data() : nullptr, static_cast<std::uint32_t>(item.raw.size())),
                  static_cast<unsigned>(cpu_), item.ts, out.data());
      char head[64];
      std::snprintf(head, sizeof head, "<...>-%d [%03d] ", getpid(), cpu_);
      EXPECT_EQ(line.rfind(head, 0), 0u) << line;
      EXPECT_NE(line.find(": marker: ip=" + std::to_string(ip) + " buf="), std::string::npos) << line;
    }
  }
  tep_free(tep);
}

// The walk of every sub-buffer the kernel wrote, held against kbuffer's:
// scheduler, interrupt and timer events on every CPU besides markers, and
// pauses longer than a time delta holds (2^27 ns), read with read(2); then a
// storm, read through the kernel's mapping: the kernel's sub-buffers then
// hold time extends, and paddings and absolute time stamps (an interrupt's
// event in the middle of another write), which cannot be forced: their
// counts are printed.
TEST_F(LiveRingTest, WalkAgreesWithKbufferOnTheKernelsSubbufs) {
  const unsigned ls = header_page_long_size(slurp(path_ + "/events/header_page"));
  ASSERT_NE(ls, 0u);
  long kb = std::strtol(slurp(path_ + "/buffer_subbuf_size_kb").c_str(), nullptr, 10);
  const std::size_t subbuf = kb > 0 ? static_cast<std::size_t>(kb) * 1024 : static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  std::size_t subbufs = 0, events = 0, kinds[4] = {0, 0, 0, 0};  // time extends, time stamps, paddings, data
  auto count_kinds = [&](const std::vector<std::uint8_t>& page) {
    SubbufParser p(ls);
    ASSERT_TRUE(p.load(page.data(), page.size()));
    const std::uint8_t* data = page.data() + p.header_size();
    std::uint64_t ts = 0;
    eventfs_rb_event ev;
    for (std::uint32_t at = 0;; at = ev.next) {
      eventfs_rb_kind k = eventfs_rb_step(data, p.data_size(), at, &ts, &ev);
      if (k == EVENTFS_RB_END || k == EVENTFS_RB_BAD) break;
      std::uint32_t word, type_len, delta;
      std::memcpy(&word, data + at, 4);
      eventfs_rb_split(word, &type_len, &delta);
      ++kinds[type_len == EVENTFS_RB_TIME_EXTEND ? 0 : type_len == EVENTFS_RB_TIME_STAMP ? 1 : type_len == EVENTFS_RB_PADDING ? 2 : 3];
    }
  };
  // One sub-buffer of CPU `cpu`, walked both ways.
  auto check = [&](const std::vector<std::uint8_t>& got, long cpu) {
    auto want = testing::kbuffer_walk(got, ls);
    auto seen = testing::parser_walk(got, ls, 1000);
    ASSERT_EQ(seen, want) << "CPU " << cpu << ", sub-buffer " << subbufs << ": "
                          << testing::first_difference(seen, want);
    ++subbufs;
    events += seen.size();
    count_kinds(got);
  };
  // Reads every CPU's sub-buffers and walks each both ways.
  auto compare_all = [&] {
    for (long cpu = 0; cpu < cpus; ++cpu) {
      std::string path = path_ + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
      int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) continue;  // a CPU with no ring
      std::vector<std::uint8_t> page(subbuf);
      for (ssize_t n; (n = ::read(fd, page.data(), page.size())) > 0;) {
        check(std::vector<std::uint8_t>(page.begin(), page.begin() + n), cpu);
        if (HasFatalFailure()) break;
      }
      ::close(fd);
    }
  };
  // The same through the kernel's mapping (reader sub-buffers hold the
  // paddings that end full ones, which read(2) leaves out).
  auto compare_mapped = [&] {
    const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    for (long cpu = 0; cpu < cpus; ++cpu) {
      std::string path = path_ + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
      int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) continue;
      void* m = mmap(nullptr, pg, PROT_READ, MAP_SHARED, fd, 0);
      ASSERT_NE(m, MAP_FAILED) << path;
      const auto* meta = static_cast<const volatile ring_abi::TraceBufferMeta*>(m);
      const std::size_t len = static_cast<std::size_t>(meta->subbuf_size) * meta->nr_subbufs;
      void* d = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, meta->meta_page_size);
      ASSERT_NE(d, MAP_FAILED) << path;
      for (int turn = 0; turn < 100000; ++turn) {
        const std::uint32_t id = meta->reader.id;
        const auto* at = static_cast<const std::uint8_t*>(d) + static_cast<std::size_t>(id) * meta->subbuf_size;
        check(std::vector<std::uint8_t>(at, at + meta->subbuf_size), cpu);
        if (HasFatalFailure()) break;
        ASSERT_EQ(ioctl(fd, ring_abi::kGetReader), 0) << std::strerror(errno);
        if (meta->reader.id == id && meta->entries <= meta->overrun + meta->read) break;
      }
      munmap(d, len);
      munmap(m, pg);
      ::close(fd);
    }
  };
  // Markers alone first: nothing else is written on this CPU during the
  // pauses, so the marker after each needs a time extend.
  for (int i = 0; i < 3; ++i) {
    mark("before a pause");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  mark("after the pauses");
  for (const char* sys : {"sched", "irq", "timer"})
    ASSERT_TRUE(write_file(path_ + "/events/" + sys + "/enable", "1")) << sys;
  for (int i = 0; i < 3000; ++i) {
    mark(std::string(1 + i % 90, 'x'));
    if (i % 100 == 0) std::this_thread::yield();
  }
  compare_all();
  ASSERT_GE(kinds[0], 3u) << "the pauses did not make time extends";
  // Then a storm from every CPU for 200 ms (what the ring keeps of it is
  // read): an interrupt's event lands in the middle of a marker's write now
  // and then.
  std::vector<std::thread> storm;
  for (long cpu = 0; cpu < cpus; ++cpu)
    storm.emplace_back([this, cpu] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(static_cast<int>(cpu), &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) return;
      int fd = ::open((path_ + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
      auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      for (int i = 0; fd >= 0 && std::chrono::steady_clock::now() < end; ++i)
        if (::write(fd, "storm marker", 5 + i % 8) < 0) break;
      if (fd >= 0) ::close(fd);
    });
  for (auto& t : storm) t.join();
  ASSERT_TRUE(write_file(path_ + "/events/enable", "0"));
  if (kernel_maps_rings()) {
    compare_mapped();
  } else {
    compare_all();  // (no mapping before Linux 6.10)
  }
  std::printf("  [walk] %zu sub-buffers, %zu events: %zu time extends, %zu absolute time stamps, %zu paddings\n",
              subbufs, events, kinds[0], kinds[1], kinds[2]);
  EXPECT_GE(events, 3000u);
}

TEST_F(LiveRingTest, PollWakesOnDataWithBufferPercentZero) {
  ASSERT_TRUE(write_file(path_ + "/buffer_percent", "0"));
  for (ReaderMode mode : kernel_modes()) {
    SCOPED_TRACE(reader_mode_name(mode));
    auto opened = open_cpu_ring(RingFiles(path_), cpu_, mode);
    ASSERT_TRUE(opened) << opened.reason();
    auto ring = std::move(*opened);
    CollectSink sink;
    drain_all(*ring, sink);
    mark("poll me");
    pollfd p{ring->poll_fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 2000), 1);
    EXPECT_TRUE(p.revents & POLLIN);
    drain_all(*ring, sink);
    ASSERT_FALSE(sink.items.empty());
    EXPECT_EQ(print_buf(sink.items.back().raw, 16), "poll me\n");
  }
}

// The running kernel's header_event describes the event header the walk
// knows (the fixture kernels' are held to it in test/unit/ring/subbuf_test.cc).
TEST(LiveHeaderEvent, DescribesTheHeaderTheWalkKnows) {
  std::string text;
  if (int e = eventfs_it::read_file(std::string(kTracefs) + "/events/header_event", text))
    GTEST_SKIP() << "cannot read the running kernel's header_event: " << std::strerror(e);
  EXPECT_EQ(header_event_mismatch(text), "");
}

}  // namespace
}  // namespace eventfs
