// eventfs-convert on recordings of other machines, built here from the
// fixture kernels' real format trees (test/fixtures): a 2.6.36 kernel (an
// extra common field, the old task-state table, char comm[TASK_COMM_LEN]),
// a 32-bit kernel (4-byte long and commit word, __data_loc comms, a task-state
// table of its own) and 6.18; each as a little- and a big-endian trace.dat of
// version 6 whose pages and records are laid out as that kernel's ring buffer
// would have them. Every converted sched_switch, read back through
// libtracecmd, has the values written, its state the letter that kernel's
// table gives the bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "support/dat_reader.h"
#include "support/fixture_kernels.h"
#include "support/synthetic.h"
#include "support/temp_dirs.h"

namespace eventfs::convert {
namespace {

using testing::ResolvedFixture;

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void reverse(std::uint8_t* p, unsigned n) { std::reverse(p, p + n); }

// Numbers in the file's byte order.
struct Out {
  bool big;
  std::vector<std::uint8_t> b;
  void put(std::uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      const unsigned shift = 8 * (big ? n - 1 - i : i);
      b.push_back(static_cast<std::uint8_t>(v >> shift));
    }
  }
  void text(const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }
  void cstr(const std::string& s) {
    text(s);
    b.push_back(0);
  }
};

// A raw record's fields in the other byte order (text and __data_loc data
// left alone, the location word swapped), as a big-endian kernel wrote them.
void swap_record(const RawEvent& ev, std::vector<std::uint8_t>& rec) {
  for (const auto* list : {&ev.common_fields, &ev.fields})
    for (const auto& f : *list) {
      if (f.shape == FieldShape::DynArray) {
        reverse(rec.data() + f.offset, 4);
        continue;
      }
      if (f.elem_type.find("char") != std::string::npos && f.shape == FieldShape::Array) continue;
      const unsigned n = f.shape == FieldShape::Array ? f.count : 1;
      for (unsigned k = 0; k < n; ++k)
        if (f.elem_bytes > 1) reverse(rec.data() + f.offset + k * f.elem_bytes, f.elem_bytes);
    }
}

// A sub-buffer made by SubbufBuilder (host order, data events only) in
// big-endian order: its time stamp, commit word, event headers (type_len in
// the top five bits) and length words.
std::vector<std::uint8_t> page_to_big(std::vector<std::uint8_t> page, unsigned long_size) {
  reverse(page.data(), 8);
  std::uint64_t commit = 0;
  std::memcpy(&commit, page.data() + 8, long_size);
  reverse(page.data() + 8, long_size);
  std::size_t at = 8 + long_size;
  const std::size_t end = at + (commit & 0xfffffff);
  while (at < end) {
    std::uint32_t w;
    std::memcpy(&w, page.data() + at, 4);
    const std::uint32_t type_len = w & 31, delta = w >> 5;
    const std::uint32_t be = (type_len << 27) | delta;
    for (int i = 0; i < 4; ++i) page[at + i] = static_cast<std::uint8_t>(be >> (24 - 8 * i));
    if (type_len != 0) {
      at += 4 + type_len * 4;
      continue;
    }
    std::uint32_t len;
    std::memcpy(&len, page.data() + at + 4, 4);
    reverse(page.data() + at + 4, 4);
    at += 4 + ((len + 3) & ~3u);
  }
  return page;
}

struct Written {
  int prev_pid;
  std::string prev_comm, next_comm, letter;
  int next_pid;
  std::uint64_t ts;
};

// The trace.dat of `kernel` holding `records` (raw, host order) at `ts0` on,
// one CPU, in the byte order asked for.
std::string make_dat(const std::string& path, const std::string& kernel, bool big, const RawEvent& ev,
                     const std::vector<std::vector<std::uint8_t>>& records, std::uint64_t ts0) {
  const unsigned long_size = testing::long_size_of(kernel);
  const std::string dir = testing::fixture_dir(kernel);
  testing::SubbufBuilder page(long_size, ts0);
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::vector<std::uint8_t> rec = records[i];
    if (big) swap_record(ev, rec);
    page.event(rec, i == 0 ? 0 : 1000);
  }
  std::vector<std::uint8_t> data = page.build();
  if (big) data = page_to_big(data, long_size);
  data.resize(4096, 0);

  Out o{big, {}};
  o.text(std::string("\x17\x08\x44tracing", 10));
  o.cstr("6");
  o.b.push_back(big ? 1 : 0);
  o.b.push_back(static_cast<std::uint8_t>(long_size));
  o.put(4096, 4);
  const std::string hp = file_text(dir + "/events/header_page"), he = file_text(dir + "/events/header_event");
  o.cstr("header_page");
  o.put(hp.size(), 8);
  o.text(hp);
  o.cstr("header_event");
  o.put(he.size(), 8);
  o.text(he);
  o.put(0, 4);  // ftrace formats
  o.put(1, 4);
  o.cstr(ev.system);
  o.put(1, 4);
  const std::string fmt = file_text(dir + "/events/" + ev.system + "/" + ev.name + "/format");
  o.put(fmt.size(), 8);
  o.text(fmt);
  o.put(0, 4);  // kallsyms
  o.put(0, 4);  // printk
  o.put(0, 8);  // cmdlines
  o.put(1, 4);  // CPUs
  o.text(std::string("options  ", 10));
  o.put(4, 2);
  o.put(8, 4);
  o.cstr("[local]");
  o.put(0, 2);
  o.text(std::string("flyrecord", 10));
  const std::size_t data_at = (o.b.size() + 16 + 4095) / 4096 * 4096;
  o.put(data_at, 8);
  o.put(data.size(), 8);
  o.b.resize(data_at, 0);
  o.b.insert(o.b.end(), data.begin(), data.end());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(o.b.data()),
                                              static_cast<std::streamsize>(o.b.size()));
  return path;
}

// The raw bit of `letter` in the kernel's sched_switch table (0 for R).
std::uint64_t state_bit(const Binding& b, const std::string& letter) {
  for (const auto& f : b.fields)
    for (const auto& [bit, l] : f.states)
      if (l == letter) return bit;
  return 0;
}

TEST(ConvertFixtures, SchedSwitchOfOtherKernelsAndByteOrdersConvertsValueForValue) {
  for (const std::string kernel : {"linux-2.6.36", "linux-32bit-alt", "linux-6.18"}) {
    ResolvedFixture fx(kernel);
    const Binding* b = fx.binding("sched_switch");
    ASSERT_NE(b, nullptr) << kernel << ": " << fx.reason("sched_switch");
    std::vector<Written> want;
    std::vector<std::vector<std::uint8_t>> records;
    const char* letters[] = {"S", "D", "R", "T"};
    for (int i = 0; i < 40; ++i) {
      Written w{1000 + i, "task-" + std::to_string(i), "next-" + std::to_string(i), letters[i % 4], 2000 + i,
                5000000 + 1000ull * i};
      const std::uint64_t bits = w.letter == "R" ? 0 : state_bit(*b, w.letter);
      ASSERT_TRUE(w.letter == "R" || bits != 0) << kernel << " has no " << w.letter;
      testing::Switch s{w.prev_comm.c_str(), w.prev_pid, bits, w.next_comm.c_str(), w.next_pid};
      records.push_back(testing::switch_record(*b, s, w.prev_pid));
      want.push_back(w);
    }
    for (bool big : {false, true}) {
      SCOPED_TRACE(kernel + (big ? ", big-endian" : ", little-endian"));
      eventfs_it::TempDir dir;
      ASSERT_TRUE(dir.ok());
      Options o;
      o.input = make_dat(dir / "in.dat", kernel, big, b->raw, records, want[0].ts);
      o.out = dir / "out.dat";
      o.format = recorder::OutputFormat::kTraceDat;
      o.events = {"sched_switch"};
      auto summary = convert(o);
      ASSERT_TRUE(summary) << summary.reason();
      EXPECT_EQ(summary->records, want.size());
      EXPECT_EQ(summary->events, want.size());

      dat_reader* r = dat_reader_open(o.out.c_str());
      ASSERT_NE(r, nullptr);
      std::vector<dat_record> got;
      dat_record rec;
      while (dat_reader_next(r, 0, &rec)) got.push_back(rec);
      dat_reader_close(r);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        const Written& w = want[i];
        const std::string expect = "prev_comm=" + w.prev_comm + " prev_pid=" + std::to_string(w.prev_pid) +
                                   " prev_state=" + w.letter + " next_comm=" + w.next_comm +
                                   " next_pid=" + std::to_string(w.next_pid);
        EXPECT_EQ(std::string(got[i].info), expect) << "record " << i;
        EXPECT_EQ(got[i].ts, w.ts) << "record " << i;
        EXPECT_EQ(got[i].pid, w.prev_pid) << "record " << i;
      }
    }
  }
}

}  // namespace
}  // namespace eventfs::convert
