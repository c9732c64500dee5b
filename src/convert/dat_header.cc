#include "convert/dat_header.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace eventfs::convert {
namespace {

// Limits on what a header may ask for: a file that is not what it should be
// gets a line, not an allocation of its word.
constexpr std::uint64_t kMaxText = 64ull << 20;      // one format, cmdlines, a section
constexpr std::uint32_t kMaxCount = 1u << 20;        // systems, events, CPUs, options

// Section and option ids of trace-cmd.dat.v7(5).
enum : std::uint16_t {
  kOptDone = 0,
  kOptBuffer = 3,
  kOptTraceClock = 4,
  kOptCpuCount = 8,
  kOptHeaderInfo = 16,
  kOptFtraceEvents = 17,
  kOptEventFormats = 18,
};

// At most 32 bytes of a text from the file, for a one-line reason: bytes
// that are not printable as \xNN.
std::string shown(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 32; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  return s.size() > 32 ? out + "..." : out;
}

class Reader {
 public:
  Reader(const unsigned char* p, std::size_t n, bool big, std::string what)
      : p_(p), n_(n), big_(big), what_(std::move(what)) {}

  void set_big_endian(bool big) { big_ = big; }
  std::size_t pos() const { return at_; }
  std::size_t size() const { return n_; }
  Status seek(std::uint64_t at) {
    if (at > n_) return bad(fmt::format("an offset ({}) past its end", at));
    at_ = static_cast<std::size_t>(at);
    return {};
  }

  template <typename T>
  Result<T> num() {
    if (n_ - at_ < sizeof(T)) return bad("ends in a number");
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      const unsigned char b = p_[at_ + (big_ ? i : sizeof(T) - 1 - i)];
      v = static_cast<T>((static_cast<std::uint64_t>(v) << 8) | b);
    }
    at_ += sizeof(T);
    return v;
  }
  Result<std::string> bytes(std::uint64_t n) {
    if (n > kMaxText || n > n_ - at_) return bad(fmt::format("a text of {} bytes past its end or limit", n));
    std::string s(reinterpret_cast<const char*>(p_ + at_), static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  Result<std::string> cstr() {
    const void* end = std::memchr(p_ + at_, 0, n_ - at_);
    if (!end) return bad("ends in a string");
    const std::size_t len = static_cast<const unsigned char*>(end) - (p_ + at_);
    std::string s(reinterpret_cast<const char*>(p_ + at_), len);
    at_ += len + 1;
    return s;
  }
  Status expect(const std::string& word) {
    auto s = cstr();
    if (!s) return std::move(s).error();
    if (*s != word) return bad(fmt::format("'{}' where '{}' belongs", shown(*s), word));
    return {};
  }
  Error bad(const std::string& what) const {
    return fail(EINVAL, fmt::format("{}: not a trace.dat this reads: {} (at byte {})", what_, what, at_));
  }
  const std::string& what() const { return what_; }

 private:
  const unsigned char* p_;
  std::size_t n_;
  std::size_t at_ = 0;
  bool big_;
  std::string what_;
};

#define TRY_ASSIGN(var, expr)                    \
  auto var##_r = (expr);                         \
  if (!var##_r) return std::move(var##_r).error(); \
  auto var = std::move(var##_r).value()

Status read_header_info(Reader& r, DatHeader& h) {
  if (Status s = r.expect("header_page"); !s) return s;
  TRY_ASSIGN(psize, r.num<std::uint64_t>());
  TRY_ASSIGN(page, r.bytes(psize));
  h.header_page = std::move(page);
  if (Status s = r.expect("header_event"); !s) return s;
  TRY_ASSIGN(esize, r.num<std::uint64_t>());
  TRY_ASSIGN(event, r.bytes(esize));
  h.header_event = std::move(event);
  return {};
}

// "name: X" of a format text.
std::string format_name(const std::string& text) {
  auto at = text.find("name: ");
  if (at == std::string::npos) return "";
  auto end = text.find('\n', at);
  return text.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

Status read_ftrace_formats(Reader& r, DatHeader& h) {
  TRY_ASSIGN(count, r.num<std::uint32_t>());
  if (count > kMaxCount) return r.bad("too many ftrace formats");
  for (std::uint32_t i = 0; i < count; ++i) {
    TRY_ASSIGN(size, r.num<std::uint64_t>());
    TRY_ASSIGN(text, r.bytes(size));
    h.formats.push_back({"ftrace", format_name(text), std::move(text)});
  }
  return {};
}

Status read_event_formats(Reader& r, DatHeader& h) {
  TRY_ASSIGN(systems, r.num<std::uint32_t>());
  if (systems > kMaxCount) return r.bad("too many systems");
  for (std::uint32_t s = 0; s < systems; ++s) {
    TRY_ASSIGN(system, r.cstr());
    TRY_ASSIGN(count, r.num<std::uint32_t>());
    if (count > kMaxCount) return r.bad("too many events");
    for (std::uint32_t i = 0; i < count; ++i) {
      TRY_ASSIGN(size, r.num<std::uint64_t>());
      TRY_ASSIGN(text, r.bytes(size));
      h.formats.push_back({system, format_name(text), std::move(text)});
    }
  }
  return {};
}

// "[local] global" -> "local".
std::string selected(const std::string& clocks) {
  auto open = clocks.find('[');
  auto close = clocks.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return clocks.substr(open + 1, close - open - 1);
}

Result<std::string> decompress(const std::string& algo, const std::string& in, std::uint32_t out_size,
                               const Reader& r) {
  if (out_size > kMaxText) return r.bad("a compressed section past the limit");
  std::string out(out_size, '\0');
  if (algo == "zstd") {
    const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n) || n != out_size) return r.bad("a zstd section that does not decompress");
    return out;
  }
  if (algo == "zlib") {
    uLongf n = out_size;
    if (uncompress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(in.data()),
                   static_cast<uLong>(in.size())) != Z_OK ||
        n != out_size)
      return r.bad("a zlib section that does not decompress");
    return out;
  }
  return r.bad(fmt::format("sections compressed with '{}', which this does not read", shown(algo)));
}

// A version 7 section at `offset`: its content, decompressed.
Result<std::string> read_section(Reader& r, std::uint64_t offset, std::uint16_t want_id, const std::string& algo) {
  if (Status s = r.seek(offset); !s) return std::move(s).error();
  TRY_ASSIGN(id, r.num<std::uint16_t>());
  TRY_ASSIGN(flags, r.num<std::uint16_t>());
  TRY_ASSIGN(string_id, r.num<std::uint32_t>());
  (void)string_id;
  TRY_ASSIGN(size, r.num<std::uint64_t>());
  if (id != want_id) return r.bad(fmt::format("section {} where {} belongs", id, want_id));
  if (!(flags & 1)) return r.bytes(size);
  TRY_ASSIGN(csize, r.num<std::uint32_t>());
  TRY_ASSIGN(usize, r.num<std::uint32_t>());
  TRY_ASSIGN(data, r.bytes(csize));
  return decompress(algo, data, usize, r);
}

Status parse_v7(Reader& r, DatHeader& h) {
  TRY_ASSIGN(algo, r.cstr());
  TRY_ASSIGN(algo_version, r.cstr());
  (void)algo_version;
  TRY_ASSIGN(options_at, r.num<std::uint64_t>());
  std::uint64_t header_info = 0, ftrace = 0, events = 0;
  int sections = 0;
  for (std::uint64_t next = options_at; next != 0 && sections < 64; ++sections) {
    TRY_ASSIGN(content, read_section(r, next, kOptDone, algo));
    Reader o(reinterpret_cast<const unsigned char*>(content.data()), content.size(), h.big_endian, r.what());
    next = 0;
    for (std::uint32_t i = 0; i < kMaxCount && o.pos() < o.size(); ++i) {
      TRY_ASSIGN(id, o.num<std::uint16_t>());
      TRY_ASSIGN(size, o.num<std::uint32_t>());
      TRY_ASSIGN(data, o.bytes(size));
      Reader d(reinterpret_cast<const unsigned char*>(data.data()), data.size(), h.big_endian, r.what());
      if (id == kOptDone) {
        TRY_ASSIGN(n, d.num<std::uint64_t>());
        next = n;
        break;
      }
      if (id == kOptHeaderInfo || id == kOptFtraceEvents || id == kOptEventFormats) {
        TRY_ASSIGN(at, d.num<std::uint64_t>());
        (id == kOptHeaderInfo ? header_info : id == kOptFtraceEvents ? ftrace : events) = at;
      } else if (id == kOptTraceClock) {
        h.trace_clock = selected(data);
      } else if (id == kOptCpuCount) {
        TRY_ASSIGN(n, d.num<std::uint32_t>());
        h.cpus = static_cast<int>(std::min(n, kMaxCount));
      } else if (id == kOptBuffer) {
        TRY_ASSIGN(at, d.num<std::uint64_t>());
        (void)at;
        TRY_ASSIGN(name, d.cstr());
        TRY_ASSIGN(clock, d.cstr());
        if (name.empty() && h.trace_clock.empty()) h.trace_clock = clock;
      }
    }
  }
  if (!header_info || !events) return r.bad("no header or event formats section");
  TRY_ASSIGN(hi, read_section(r, header_info, kOptHeaderInfo, algo));
  Reader hr(reinterpret_cast<const unsigned char*>(hi.data()), hi.size(), h.big_endian, r.what());
  if (Status s = read_header_info(hr, h); !s) return s;
  if (ftrace) {
    TRY_ASSIGN(ft, read_section(r, ftrace, kOptFtraceEvents, algo));
    Reader fr(reinterpret_cast<const unsigned char*>(ft.data()), ft.size(), h.big_endian, r.what());
    if (Status s = read_ftrace_formats(fr, h); !s) return s;
  }
  TRY_ASSIGN(ev, read_section(r, events, kOptEventFormats, algo));
  Reader er(reinterpret_cast<const unsigned char*>(ev.data()), ev.size(), h.big_endian, r.what());
  return read_event_formats(er, h);
}

Status parse_v6(Reader& r, DatHeader& h) {
  if (Status s = read_header_info(r, h); !s) return s;
  if (Status s = read_ftrace_formats(r, h); !s) return s;
  if (Status s = read_event_formats(r, h); !s) return s;
  TRY_ASSIGN(kallsyms, r.num<std::uint32_t>());
  if (Status s = r.seek(r.pos() + std::uint64_t{kallsyms}); !s) return s;
  TRY_ASSIGN(printk, r.num<std::uint32_t>());
  if (Status s = r.seek(r.pos() + std::uint64_t{printk}); !s) return s;
  TRY_ASSIGN(cmdlines, r.num<std::uint64_t>());
  if (Status s = r.seek(r.pos() + cmdlines); !s) return s;
  TRY_ASSIGN(cpus, r.num<std::uint32_t>());
  h.cpus = static_cast<int>(std::min(cpus, kMaxCount));
  // "options  " (then options up to id 0), or straight "flyrecord"/"latency  ".
  TRY_ASSIGN(word, r.bytes(10));
  if (word != std::string("options  ", 10)) return {};
  for (std::uint32_t i = 0; i < kMaxCount; ++i) {
    TRY_ASSIGN(id, r.num<std::uint16_t>());
    if (id == kOptDone) break;
    TRY_ASSIGN(size, r.num<std::uint32_t>());
    TRY_ASSIGN(data, r.bytes(size));
    if (id == kOptTraceClock) h.trace_clock = selected(data);
  }
  return {};
}

#undef TRY_ASSIGN

}  // namespace

Result<DatHeader> parse_dat_header(const unsigned char* bytes, std::size_t size, const std::string& what) {
  Reader r(bytes, size, false, what);
  static const unsigned char kMagic[10] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    return r.bad("no trace.dat magic");
  (void)r.seek(sizeof kMagic);
  DatHeader h;
  auto version = r.cstr();
  if (!version) return std::move(version).error();
  if (*version != "6" && *version != "7") return r.bad(fmt::format("version '{}' (this reads 6 and 7)", shown(*version)));
  h.version = *version == "6" ? 6 : 7;
  auto endian = r.num<std::uint8_t>();
  auto long_size = r.num<std::uint8_t>();
  if (!endian || !long_size || *endian > 1 || (*long_size != 4 && *long_size != 8))
    return r.bad("a byte order or a long size it does not know");
  h.big_endian = *endian == 1;
  h.long_size = *long_size;
  r.set_big_endian(h.big_endian);
  auto page = r.num<std::uint32_t>();
  if (!page || *page < 64 || *page > (1u << 24)) return r.bad("a page size it does not take");
  h.page_size = *page;
  Status s = h.version == 6 ? parse_v6(r, h) : parse_v7(r, h);
  if (!s) return std::move(s).error();
  return h;
}

Result<DatHeader> read_dat_header(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot open {}: {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(EINVAL, fmt::format("{} is not a regular file", path));
  }
  // Mapped, not read: a version 7 file may keep its sections after the data.
  const std::size_t n = static_cast<std::size_t>(st.st_size);
  if (n == 0) {
    ::close(fd);
    return fail(EINVAL, fmt::format("{}: not a trace.dat this reads: it is empty", path));
  }
  void* map = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    int e = errno;
    return fail(e, fmt::format("cannot map {}: {}", path, std::strerror(e)));
  }
  auto h = parse_dat_header(static_cast<const unsigned char*>(map), n, path);
  ::munmap(map, n);
  return h;
}

}  // namespace eventfs::convert
