#include "options.h"

#include <grp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/priority.h"
#include "eventfs_config.h"
#include "stream/stream_hub.h"

namespace eventfs {
namespace {

// fuse_opt's view: every value as the text given.
struct RawOptions {
  char* tracefs = nullptr;
  char* catalog = nullptr;
  char* instance = nullptr;
  char* reader = nullptr;
  char* nice = nullptr;
  char* rt = nullptr;
  char* queue_kb = nullptr;
  char* gid = nullptr;
  std::string max_read;
  std::vector<std::string> positional;
  bool foreground = false;
  bool single_thread = false;
  bool help = false;
  bool version = false;
  ~RawOptions() {
    for (char* o : {tracefs, catalog, instance, reader, nice, rt, queue_kb, gid}) std::free(o);
  }
};

enum { KEY_HELP, KEY_VERSION, KEY_FOREGROUND, KEY_DEBUG, KEY_SINGLE, KEY_MAX_READ };

#define EVENTFS_OPT(t, p) {t, offsetof(RawOptions, p), 1}
const fuse_opt kOptionSpec[] = {
    EVENTFS_OPT("tracefs=%s", tracefs),
    EVENTFS_OPT("catalog=%s", catalog),
    EVENTFS_OPT("instance=%s", instance),
    EVENTFS_OPT("reader=%s", reader),
    EVENTFS_OPT("nice=%s", nice),
    EVENTFS_OPT("rt=%s", rt),
    EVENTFS_OPT("queue_kb=%s", queue_kb),
    EVENTFS_OPT("gid=%s", gid),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_KEY("-f", KEY_FOREGROUND),
    FUSE_OPT_KEY("-d", KEY_DEBUG),
    FUSE_OPT_KEY("debug", KEY_DEBUG),
    FUSE_OPT_KEY("-s", KEY_SINGLE),
    FUSE_OPT_KEY("max_read=", KEY_MAX_READ),
    FUSE_OPT_END,
};
#undef EVENTFS_OPT

int option_proc(void* data, const char* arg, int key, fuse_args*) {
  auto* o = static_cast<RawOptions*>(data);
  switch (key) {
    case FUSE_OPT_KEY_NONOPT: o->positional.emplace_back(arg); return 0;
    case KEY_HELP: o->help = true; return 0;
    case KEY_VERSION: o->version = true; return 0;
    case KEY_FOREGROUND: o->foreground = true; return 0;
    case KEY_DEBUG: o->foreground = true; return 1;  // libfuse prints requests too
    case KEY_SINGLE: o->single_thread = true; return 0;
    case KEY_MAX_READ: o->max_read = arg + std::strlen("max_read="); return 1;  // libfuse's too
    default: return 1;  // libfuse's own options pass through
  }
}

OptionsError bad(std::string message) { return OptionsError{std::move(message), false}; }

// The value of -o NAME=TEXT, a whole decimal number in [lo, hi]; else what
// is wrong, with `what` (the expected range in words).
Result<long, OptionsError> int_option(const char* name, const char* text, long lo, long hi, const char* what) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(text, &end, 10);
  if (!*text || !end || *end || errno != 0 || n < lo || n > hi)
    return bad(std::string(name) + "=" + text + ": expected " + what);
  return n;
}

// -o nice=N, or 10 below the daemon's own nice value.
Result<long, OptionsError> drainer_nice(const RawOptions& o) {
  if (!o.nice) return nice_below_own(10);
  return int_option("nice", o.nice, -20, 19, "a number from -20 to 19");
}

// -o gid=GROUP: a number, or a group's name.
Result<gid_t, OptionsError> group_of(const char* text) {
  char* end = nullptr;
  unsigned long n = std::strtoul(text, &end, 10);
  if (*text && std::isdigit(static_cast<unsigned char>(*text)) && end && !*end &&
      n < static_cast<unsigned long>(static_cast<gid_t>(-1)))
    return static_cast<gid_t>(n);
  if (const struct group* g = getgrnam(text)) return g->gr_gid;
  return bad(std::string("gid=") + text + ": no such group");
}

// The mount point: absolute, and a directory.
Result<std::string, OptionsError> mount_point(const std::string& given) {
  std::string mnt = given;
  if (char* real = realpath(mnt.c_str(), nullptr)) {
    mnt = real;
    std::free(real);
  }
  struct stat st;
  if (stat(mnt.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT && (mnt == "/sys/kernel/events" || mnt == "/sys/kernel/events/"))
      return bad(
          "/sys/kernel/events does not exist: sysfs has no such directory on this kernel "
          "(mainline kernels do not create it), and none can be made there; mount eventfs "
          "elsewhere, for example: mkdir -p /mnt/events && eventfs /mnt/events");
    return bad("mount point " + mnt + ": " + std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) return bad("mount point " + mnt + ": " + std::strerror(ENOTDIR));
  return mnt;
}

// The checked values of `raw` into `o`.
Result<void, OptionsError> check(const RawOptions& raw, DaemonOptions& o) {
  if (raw.positional.empty()) return OptionsError{"no mount point given", true};
  if (raw.positional.size() > 2) return bad("too many arguments: '" + raw.positional[2] + "'");
  if (raw.positional.size() == 2) o.source = raw.positional[0];
  if (raw.instance && !*raw.instance) return bad("instance= needs a name");
  if (raw.tracefs) o.tracefs = raw.tracefs;
  if (raw.catalog) o.catalog = raw.catalog;
  if (raw.instance) o.instance = raw.instance;
  if (raw.gid) {
    auto g = group_of(raw.gid);
    if (!g) return std::move(g).error();
    o.group = *g;
  }
  if (raw.reader) {
    Result<ReaderMode> mode = parse_reader_mode(raw.reader);
    if (!mode) return bad(std::string("reader=") + raw.reader + ": " + mode.reason());
    o.reader_mode = *mode;
  }
  auto nice = drainer_nice(raw);
  if (!nice) return std::move(nice).error();
  o.drainer_nice = static_cast<int>(*nice);
  if (raw.rt) {
    auto rt = int_option("rt", raw.rt, 1, 99, "a priority from 1 to 99");
    if (!rt) return std::move(rt).error();
    o.drainer_fifo = static_cast<int>(*rt);
  }
  // A queue holds a few of the largest records (EVENTFS_RECORD_MAX_SIZE) whole.
  o.queue_bytes = StreamHub::kQueueBytes;
  if (raw.queue_kb) {
    auto kb = int_option("queue_kb", raw.queue_kb, 256, 1048576, "a size in KiB from 256 to 1048576");
    if (!kb) return std::move(kb).error();
    o.queue_bytes = static_cast<std::size_t>(*kb) << 10;
  }
  if (!raw.max_read.empty()) {
    auto n = int_option("max_read", raw.max_read.c_str(), 4096, 1 << 30, "a size in bytes from 4096 to 1073741824");
    if (!n) return std::move(n).error();
    o.max_read = static_cast<unsigned>(*n);
  }
  auto mnt = mount_point(raw.positional.back());
  if (!mnt) return std::move(mnt).error();
  o.mountpoint = std::move(mnt).value();
  return {};
}

}  // namespace

Result<DaemonOptions, OptionsError> parse_daemon_options(fuse_args& args) {
  RawOptions raw;
  // (fuse_opt_parse has said what is wrong, on stderr)
  if (fuse_opt_parse(&args, &raw, kOptionSpec, option_proc) != 0) return OptionsError{"", false};
  DaemonOptions o;
  o.foreground = raw.foreground;
  o.single_thread = raw.single_thread;
  o.help = raw.help;
  o.version = raw.version;
  if (o.help || o.version) return o;
  if (auto checked = check(raw, o); !checked) return std::move(checked).error();
  return o;
}

void print_usage(FILE* to) {
  std::fprintf(to,
               "usage: eventfs [SOURCE] MOUNTPOINT [-o opt,...] [-f] [-d] [-s]\n"
               "\n"
               "eventfs options:\n"
               "    -o tracefs=DIR      tracefs to use (default: the mounted one, or mount it\n"
               "                        at /sys/kernel/tracing)\n"
               "    -o catalog=PATH     catalog file or directory of *.catalog files\n"
               "                        (default: %s, else the built-in copy)\n"
               "    -o instance=NAME    tracefs instance eventfs writes to (default: eventfs)\n"
               "    -o reader=MODE      how rings are read: auto (the default: read), mmap, read\n"
               "    -o nice=N           nice value of the threads reading the rings\n"
               "                        (default: 10 below the daemon's own)\n"
               "    -o rt=PRIO          run them SCHED_FIFO at PRIO (1-99) instead\n"
               "    -o queue_kb=N       records kept for the streams' readers, per CPU\n"
               "                        (KiB, 256 to 1048576; default 8192)\n"
               "    -o gid=GROUP        group owning the files (name or number): with\n"
               "                        allow_other its members may read formats and\n"
               "                        streams; control files stay writable by root only\n"
               "    -f                  stay in the foreground\n"
               "    -d                  debug: foreground, and print every FUSE request\n"
               "    -s                  single-threaded\n"
               "    -h, --help          this help\n"
               "    -V, --version       the version\n"
               "\nOther -o options are libfuse's (see mount.fuse3(8)). See eventfs(8).\n",
               EVENTFS_CATALOG_DIR);
}

}  // namespace eventfs
