// eventfs-convert's reader of a trace.dat's header (convert/dat_header.h):
// a version 6 file written by eventfs-record's writer gives back its formats,
// page size, long and clock; a file cut short anywhere, or not a trace.dat,
// is one line naming it, never a crash or a read past its end.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "convert/dat_header.h"
#include "recorder/dat_file.h"
#include "recorder/dat_format.h"
#include "support/temp_dirs.h"

namespace eventfs::convert {
namespace {

std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Written {
  eventfs_it::TempDir dir;
  std::string path;
  std::vector<unsigned char> bytes;
  Written() {
    recorder::DatContents c;
    c.page_size = 4096;
    c.formats = {"name: one\nID: 3\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n",
                 "name: two\nID: 4\nformat:\n"};
    c.cmdlines = "1 init\n";
    c.trace_clock = "[mono] local\n";
    c.uname = "Linux";
    c.version = "test";
    path = dir / "t.dat";
    if (recorder::write_trace_dat(path, c)) bytes = file_bytes(path);
  }
};

TEST(ConvertDatHeader, AVersion6FileGivesBackItsFormatsAndLayout) {
  Written w;
  ASSERT_FALSE(w.bytes.empty());
  auto h = read_dat_header(w.path);
  ASSERT_TRUE(h) << h.reason();
  EXPECT_EQ(h->version, 6);
  EXPECT_EQ(h->long_size, sizeof(long));
  EXPECT_EQ(h->page_size, 4096u);
  EXPECT_EQ(h->header_page, recorder::dat_header_page(4096));
  EXPECT_EQ(h->header_event, recorder::dat_header_event());
  ASSERT_EQ(h->formats.size(), 2u);
  EXPECT_EQ(h->formats[0].system, "eventfs");
  EXPECT_EQ(h->formats[0].event, "one");
  EXPECT_EQ(h->formats[1].event, "two");
  EXPECT_EQ(h->trace_clock, "mono");
  EXPECT_EQ(h->cpus, 0);
}

TEST(ConvertDatHeader, AFileCutShortAnywhereOrNotATraceDatIsOneLine) {
  Written w;
  ASSERT_FALSE(w.bytes.empty());
  // Every cut inside the header (the options end it).
  const std::size_t header_end = 400;
  for (std::size_t n = 0; n < std::min(header_end, w.bytes.size()); ++n) {
    std::vector<unsigned char> cut(w.bytes.begin(), w.bytes.begin() + static_cast<long>(n));
    auto h = parse_dat_header(cut.data(), cut.size(), "cut.dat");
    if (h) continue;  // past the formats, a cut may leave what this reads whole
    EXPECT_EQ(h.reason().find("cut.dat: not a trace.dat this reads: "), 0u) << h.reason();
    EXPECT_EQ(h.reason().find('\n'), std::string::npos);
  }
  const std::string junk = "\x17\x08\x44tracing9\0";
  auto h = parse_dat_header(reinterpret_cast<const unsigned char*>(junk.data()), junk.size() + 1, "v9.dat");
  ASSERT_FALSE(h);
  EXPECT_NE(h.reason().find("version '9'"), std::string::npos) << h.reason();
  // A size field that asks for more than the file has.
  std::vector<unsigned char> big = w.bytes;
  const std::size_t at = 10 + 2 + 1 + 1 + 4 + 12;  // header_page's size
  for (int i = 0; i < 8; ++i) big[at + i] = 0xff;
  h = parse_dat_header(big.data(), big.size(), "big.dat");
  ASSERT_FALSE(h);
  EXPECT_NE(h.reason().find("past its end or limit"), std::string::npos) << h.reason();
}

}  // namespace
}  // namespace eventfs::convert
