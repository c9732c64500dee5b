#include "recorder/dat_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "recorder/dat_format.h"
#include "recorder/write_all.h"

namespace eventfs::recorder {
namespace {

// The options of trace-cmd.dat.v7(5) that version 6 files carry too.
constexpr std::uint16_t kOptionDone = 0;
constexpr std::uint16_t kOptionTraceClock = 4;
constexpr std::uint16_t kOptionUname = 5;
constexpr std::uint16_t kOptionVersion = 9;

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  void text(const std::string& s) { out_.insert(out_.end(), s.begin(), s.end()); }
  // A string and its terminating NUL.
  void cstr(const std::string& s) {
    text(s);
    out_.push_back(0);
  }
  void sized64(const std::string& s) {
    put<std::uint64_t>(s.size());
    text(s);
  }
  void option(std::uint16_t id, const std::string& value) {
    put<std::uint16_t>(id);
    put<std::uint32_t>(static_cast<std::uint32_t>(value.size() + 1));
    cstr(value);
  }
  std::size_t size() const { return out_.size(); }
  void pad_to(std::size_t n) { out_.resize(n, 0); }
  std::vector<unsigned char>& data() { return out_; }

 private:
  std::vector<unsigned char> out_;
};

bool host_is_big_endian() {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 0;
}

// Copies `size` bytes of `from` to the end of `fd`.
Status copy_in(int fd, const std::string& from, std::uint64_t size, const std::string& path) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot open {}: {}", from, std::strerror(e)));
  }
  std::vector<unsigned char> buf(1 << 16);
  Status s;
  while (size > 0 && s) {
    ssize_t n = ::read(in, buf.data(), std::min<std::uint64_t>(size, buf.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      s = fail(e, fmt::format("reading {}: {}", from, n < 0 ? std::strerror(e) : "shorter than it was"));
      break;
    }
    s = write_all(fd, buf.data(), static_cast<std::size_t>(n), path);
    size -= static_cast<std::uint64_t>(n);
  }
  ::close(in);
  return s;
}

}  // namespace

Status write_trace_dat(const std::string& path, const DatContents& c) {
  // The CPUs' data sizes, known before the header that gives them is made.
  std::vector<std::uint64_t> sizes;
  for (const auto& f : c.cpu_files) {
    struct stat st {};
    if (f.empty()) sizes.push_back(0);
    else if (::stat(f.c_str(), &st) == 0) sizes.push_back(static_cast<std::uint64_t>(st.st_size));
    else {
      int e = errno;
      return fail(e, fmt::format("cannot read {}: {}", f, std::strerror(e)));
    }
  }

  Bytes b;
  b.text("\x17\x08\x44tracing");
  b.cstr("6");
  b.put<std::uint8_t>(host_is_big_endian() ? 1 : 0);
  b.put<std::uint8_t>(sizeof(long));
  b.put<std::uint32_t>(static_cast<std::uint32_t>(c.page_size));
  b.cstr("header_page");
  b.sized64(dat_header_page(c.page_size));
  b.cstr("header_event");
  b.sized64(dat_header_event());
  b.put<std::uint32_t>(0);  // ftrace formats
  b.put<std::uint32_t>(c.formats.empty() ? 0 : 1);
  if (!c.formats.empty()) {
    b.cstr(kDatSystem);
    b.put<std::uint32_t>(static_cast<std::uint32_t>(c.formats.size()));
    for (const auto& f : c.formats) b.sized64(f);
  }
  b.put<std::uint32_t>(0);  // kallsyms
  b.put<std::uint32_t>(0);  // printk formats
  b.sized64(c.cmdlines);
  b.put<std::uint32_t>(static_cast<std::uint32_t>(c.cpu_files.size()));
  b.text(std::string("options  ", 10));
  b.option(kOptionTraceClock, c.trace_clock);
  b.option(kOptionUname, c.uname);
  b.option(kOptionVersion, c.version);
  b.put<std::uint16_t>(kOptionDone);
  b.text(std::string("flyrecord", 10));
  // The CPUs' data follows the header, each at a page's start.
  const std::size_t header = b.size() + 16 * c.cpu_files.size();
  std::uint64_t at = (header + c.page_size - 1) / c.page_size * c.page_size;
  for (std::uint64_t size : sizes) {
    b.put<std::uint64_t>(size ? at : 0);
    b.put<std::uint64_t>(size);
    at += (size + c.page_size - 1) / c.page_size * c.page_size;
  }
  b.pad_to((header + c.page_size - 1) / c.page_size * c.page_size);

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    return fail(e, fmt::format("cannot create {}: {}", path, std::strerror(e)));
  }
  Status s = write_all(fd, b.data().data(), b.size(), path);
  for (std::size_t i = 0; i < sizes.size() && s; ++i) {
    if (sizes[i] == 0) continue;
    s = copy_in(fd, c.cpu_files[i], sizes[i], path);
    const std::size_t pad = static_cast<std::size_t>((c.page_size - sizes[i] % c.page_size) % c.page_size);
    if (s && pad) {
      std::vector<unsigned char> zeros(pad, 0);
      s = write_all(fd, zeros.data(), pad, path);
    }
  }
  if (::close(fd) != 0 && s) {
    int e = errno;
    s = fail(e, fmt::format("writing {}: {}", path, std::strerror(e)));
  }
  return s;
}

}  // namespace eventfs::recorder
