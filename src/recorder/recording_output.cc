// The two outputs of a recording: a CTF directory and a trace.dat.
#include "recorder/recording_output.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "eventfs_config.h"
#include "recorder/dat_cpu_writer.h"
#include "recorder/dat_file.h"
#include "recorder/dat_format.h"
#include "recorder/ring_page.h"
#include "recorder/stream_writer.h"
#include "recorder/tsdl.h"
#include "recorder/write_all.h"

namespace eventfs::recorder {
namespace {

Error errno_failure(int e, const std::string& what) { return fail(e, fmt::format("{}: {}", what, std::strerror(e))); }

// ./eventfs-record-YYYYMMDD-HHMMSS, with `suffix`.
std::string default_name(const char* suffix) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "eventfs-record-%Y%m%d-%H%M%S", &tm);
  return std::string(buf) + suffix;
}

// An existing directory that must be empty.
Status check_empty_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    int e = errno;
    return errno_failure(e, "cannot read " + dir);
  }
  bool empty = true;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
  ::closedir(d);
  if (!empty) return fail(ENOTEMPTY, fmt::format("{} exists and is not empty", dir));
  return {};
}

Status write_whole_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    return errno_failure(e, "cannot create " + path);
  }
  if (Status s = write_all(fd, text.data(), text.size(), path); !s) {
    ::close(fd);
    ::unlink(path.c_str());
    return s;
  }
  if (::close(fd) != 0) {
    int e = errno;
    return errno_failure(e, "writing " + path);
  }
  return {};
}

// metadata and stream_N in a new or empty directory.
class CtfOutput : public RecordingOutput {
 public:
  CtfOutput(const Options& o, const MountLayout& layout)
      : layout_(layout), dir_(o.out_dir.empty() ? default_name("") : o.out_dir) {}

  Status prepare() override {
    struct stat st {};
    if (::stat(dir_.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR, fmt::format("{} exists and is not a directory", dir_));
      return check_empty_dir(dir_);
    }
    if (::mkdir(dir_.c_str(), 0755) != 0) {
      int e = errno;
      return errno_failure(e, "cannot create " + dir_);
    }
    return {};
  }

  // Its memory: one packet, of a size that keeps all of them within 16 MiB
  // (StreamWriter::packet_size_for()).
  Result<std::unique_ptr<CpuSink>> open_cpu(int cpu, std::size_t cpus) override {
    auto w = std::make_unique<StreamWriter>();
    if (Status s = w->open(fmt::format("{}/stream_{}", dir_, cpu), static_cast<std::uint32_t>(cpu),
                           StreamWriter::packet_size_for(cpus));
        !s)
      return std::move(s).error();
    return std::unique_ptr<CpuSink>(std::move(w));
  }

  Status started(const ClockOffset& offset) override {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return write_whole_file(dir_ + "/metadata", tsdl_metadata(layout_, host, offset));
  }

  Status finish() override { return {}; }
  void abandon() override {}
  const std::string& path() const override { return dir_; }
  const char* unit() const override { return "packets"; }

 private:
  const MountLayout& layout_;
  std::string dir_;
};

// One trace.dat; each CPU's pages in <file>.cpuN until the end.
class DatOutput : public RecordingOutput {
 public:
  DatOutput(const Options& o, const MountLayout& layout)
      : layout_(layout), file_(o.out_dir.empty() ? default_name(".dat") : o.out_dir),
        page_size_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {}

  Status prepare() override {
    struct stat st {};
    if (::lstat(file_.c_str(), &st) == 0) return fail(EEXIST, fmt::format("{} exists", file_));
    auto ids = dat_event_ids(layout_);
    if (!ids) return std::move(ids).error();
    ids_ = std::move(ids).value();
    for (const auto& e : layout_.events) {
      const std::size_t len = kDatCommonSize + (e.end + 7u) / 8 * 8;
      if (len > RingPage::max_data(page_size_))
        return fail(EMSGSIZE, fmt::format("{}'s records ({} bytes) do not fit a trace.dat page of {} bytes", e.name,
                                          len, page_size_));
    }
    return {};
  }

  Result<std::unique_ptr<CpuSink>> open_cpu(int cpu, std::size_t) override {
    auto w = std::make_unique<DatCpuWriter>(layout_, ids_, page_size_);
    if (Status s = w->open(fmt::format("{}.cpu{}", file_, cpu)); !s) return std::move(s).error();
    if (static_cast<std::size_t>(cpu) >= writers_.size()) writers_.resize(static_cast<std::size_t>(cpu) + 1);
    writers_[static_cast<std::size_t>(cpu)] = w.get();
    return std::unique_ptr<CpuSink>(std::move(w));
  }

  Status started(const ClockOffset&) override { return {}; }

  Status finish() override {
    DatContents c;
    c.page_size = page_size_;
    for (const auto& e : layout_.events) c.formats.push_back(dat_event_format(layout_, e, ids_.at(e.id)));
    TaskNames names(layout_);
    for (const DatCpuWriter* w : writers_) {
      c.cpu_files.push_back(w ? w->path() : std::string());
      if (w) names.merge(w->task_names());
    }
    c.cmdlines = names.cmdlines();
    c.trace_clock = "[" + layout_.clock + "]\n";
    utsname u{};
    if (::uname(&u) == 0) c.uname = fmt::format("{} {} {} {} {}", u.sysname, u.nodename, u.release, u.version, u.machine);
    c.version = "eventfs-record " EVENTFS_VERSION;
    Status s = write_trace_dat(file_, c);
    if (s) remove_cpu_files();
    return s;
  }

  void abandon() override { remove_cpu_files(); }
  const std::string& path() const override { return file_; }
  const char* unit() const override { return "pages"; }

 private:
  void remove_cpu_files() {
    for (const DatCpuWriter* w : writers_)
      if (w) ::unlink(w->path().c_str());
  }

  const MountLayout& layout_;
  std::string file_;
  std::size_t page_size_;
  std::map<std::uint32_t, std::uint16_t> ids_;
  std::vector<const DatCpuWriter*> writers_;  // by CPU; owned by the recorders
};

}  // namespace

std::unique_ptr<RecordingOutput> make_output(const Options& opts, const MountLayout& layout) {
  if (opts.format == OutputFormat::kTraceDat) return std::make_unique<DatOutput>(opts, layout);
  return std::make_unique<CtfOutput>(opts, layout);
}

}  // namespace eventfs::recorder
