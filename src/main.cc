// eventfs: options (fuse_opt, -o style), start-up and shutdown.
//
// Everything that can fail is checked before the mount is made, so a bad
// option, catalog or mount point gives one line on stderr and a non-zero exit;
// the daemon goes to the background only once the mount is up.
#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "catalog/parser.h"
#include "eventfs_config.h"
#include "fuse/fuse_adapter.h"
#include "fuse/session_loop.h"
#include "mount/mount_parts.h"
#include "mount/mount_watch.h"
#include "ring/ring.h"
#include "tracefs/locate.h"

namespace {

using namespace eventfs;

struct Options {
  char* tracefs = nullptr;
  char* catalog = nullptr;
  char* instance = nullptr;
  char* reader = nullptr;
  char* nice = nullptr;
  char* rt = nullptr;
  char* queue_kb = nullptr;
  char* gid = nullptr;
  std::string max_read;  // also passed on to libfuse
  std::vector<std::string> positional;
  bool foreground = false;
  bool single_thread = false;
  bool help = false;
  bool version = false;
};

enum { KEY_HELP, KEY_VERSION, KEY_FOREGROUND, KEY_DEBUG, KEY_SINGLE, KEY_MAX_READ };

#define EVENTFS_OPT(t, p) {t, offsetof(Options, p), 1}
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

int option_proc(void* data, const char* arg, int key, fuse_args*) {
  auto* o = static_cast<Options*>(data);
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

void usage(FILE* to) {
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

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "eventfs: %s\n", msg.c_str());
  std::exit(1);
}

// The value of -o NAME=TEXT, a whole decimal number in [lo, hi]; else the
// daemon stops with `what` (the expected range in words).
int int_option_or_die(const char* name, const char* text, long lo, long hi, const char* what) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(text, &end, 10);
  if (!*text || !end || *end || errno != 0 || n < lo || n > hi)
    die(std::string(name) + "=" + text + ": expected " + what);
  return static_cast<int>(n);
}

// -o queue_kb=N: a CPU's record queue, in KiB. At least 256: a queue holds
// a few of the largest records (EVENTFS_RECORD_MAX_SIZE) whole.
std::size_t queue_bytes_or_die(const Options& opts) {
  if (!opts.queue_kb) return StreamHub::kQueueBytes;
  return static_cast<std::size_t>(int_option_or_die("queue_kb", opts.queue_kb, 256, 1048576, "a size in KiB from 256 to 1048576")) << 10;
}

// -o nice=N, or 10 below the daemon's own nice value.
int drainer_nice_or_die(const Options& opts) {
  if (!opts.nice) {
    errno = 0;
    int own = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) own = 0;
    return std::max(own - 10, -20);
  }
  return int_option_or_die("nice", opts.nice, -20, 19, "a number from -20 to 19");
}

// -o rt=PRIO: a SCHED_FIFO priority, 1 to 99.
std::optional<int> drainer_fifo_or_die(const Options& opts) {
  if (!opts.rt) return std::nullopt;
  return int_option_or_die("rt", opts.rt, 1, 99, "a priority from 1 to 99");
}

void check_mount_point(const std::string& mnt) {
  struct stat st;
  if (stat(mnt.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT && (mnt == "/sys/kernel/events" || mnt == "/sys/kernel/events/"))
      die("/sys/kernel/events does not exist: sysfs has no such directory on this kernel "
          "(mainline kernels do not create it), and none can be made there; mount eventfs "
          "elsewhere, for example: mkdir -p /mnt/events && eventfs /mnt/events");
    die("mount point " + mnt + ": " + std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) die("mount point " + mnt + ": " + std::strerror(ENOTDIR));
}

bool has_catalog_files(const char* dir) {
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(dir, ec))
    if (de.path().extension() == ".catalog") return true;
  return false;
}

Catalog load_catalog_or_die(const Options& o) {
  Catalog cat;
  CatalogResult loaded;
  if (o.catalog)
    loaded = load_catalog(o.catalog, cat);
  else if (has_catalog_files(EVENTFS_CATALOG_DIR))
    loaded = load_catalog(EVENTFS_CATALOG_DIR, cat);
  else  // not installed (or installed and emptied): the copy built in
    loaded = parse_catalog(builtin_catalog_text(), kBuiltinCatalogName, cat);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().str().c_str());
    std::exit(1);
  }
  return cat;
}

std::string tracefs_root_or_die(const Options& o) {
  auto root = o.tracefs ? given_tracefs(o.tracefs) : locate_tracefs();
  if (!root) die(root.reason());
  return std::move(root).value();
}

// The shutdown's last step for the mount: take it away if it is still there
// and the path reaches it. A mount another one sits on is left (the path
// would unmount that one); it answers ENOTCONN once the daemon has gone.
void unmount_own(const OwnMount& own) {
  const std::string table = read_mountinfo();
  if (!own.present(table)) return;
  if (own.covered(table)) {
    std::fprintf(stderr,
                 "eventfs: %s: another mount sits on this one; it stays, without its daemon, until that one "
                 "is unmounted and then it is (umount %s)\n",
                 own.path.c_str(), own.path.c_str());
    return;
  }
  if (umount2(own.path.c_str(), MNT_DETACH) != 0)
    std::fprintf(stderr, "eventfs: cannot unmount %s: %s\n", own.path.c_str(), std::strerror(errno));
}

}  // namespace

int main(int argc, char* argv[]) {
  // Static: what they hold stays reachable whichever way the process ends.
  static fuse_args args = FUSE_ARGS_INIT(argc, argv);
  static Options opts;
  if (fuse_opt_parse(&args, &opts, kOptionSpec, option_proc) != 0) return 1;
  if (opts.help || opts.version) {
    if (opts.help)
      usage(stdout);
    else
      std::printf("eventfs %s (libfuse %s)\n", EVENTFS_VERSION, fuse_pkgversion());
    fuse_opt_free_args(&args);
    return 0;
  }
  if (opts.positional.empty()) {
    usage(stderr);
    die("no mount point given");
  }
  if (opts.positional.size() > 2) die("too many arguments: '" + opts.positional[2] + "'");
  // The daemon moves to / when it goes to the background (and libfuse
  // unmounts by this path at the end): keep it absolute.
  std::string mountpoint = opts.positional.back();
  if (char* real = realpath(mountpoint.c_str(), nullptr)) {
    mountpoint = real;
    std::free(real);
  }
  const std::string source = opts.positional.size() == 2 ? opts.positional[0] : "eventfs";
  if (opts.instance && !*opts.instance) die("instance= needs a name");
  gid_t group = 0;
  if (opts.gid) {
    char* end = nullptr;
    unsigned long n = std::strtoul(opts.gid, &end, 10);
    if (*opts.gid && std::isdigit(static_cast<unsigned char>(*opts.gid)) && end && !*end &&
        n < static_cast<unsigned long>(static_cast<gid_t>(-1))) {
      group = static_cast<gid_t>(n);
    } else if (const struct group* g = getgrnam(opts.gid)) {
      group = g->gr_gid;
    } else {
      die(std::string("gid=") + opts.gid + ": no such group");
    }
  }
  ReaderMode reader_mode = ReaderMode::Auto;
  if (opts.reader) {
    Result<ReaderMode> mode = parse_reader_mode(opts.reader);
    if (!mode) die(std::string("reader=") + opts.reader + ": " + mode.reason());
    reader_mode = *mode;
  }
  const int drainer_nice = drainer_nice_or_die(opts);
  const std::optional<int> drainer_fifo = drainer_fifo_or_die(opts);
  const std::size_t queue_bytes = queue_bytes_or_die(opts);
  SessionInit session_init;
  if (!opts.max_read.empty())
    session_init.max_read = static_cast<unsigned>(
        int_option_or_die("max_read", opts.max_read.c_str(), 4096, 1 << 30, "a size in bytes from 4096 to 1073741824"));
  session_init.served = serving_started;

  check_mount_point(mountpoint);
  MountConfig config;
  config.tracefs_root = tracefs_root_or_die(opts);
  if (opts.instance) config.instance_name = opts.instance;
  config.reader_mode = reader_mode;
  config.queue_bytes = queue_bytes;
  config.drainer_nice = drainer_nice;
  config.drainer_fifo = drainer_fifo;
  config.group = group;
  Result<std::unique_ptr<MountParts>> built = MountParts::build(load_catalog_or_die(opts), config);
  if (!built) die(built.reason());
  std::unique_ptr<MountParts> parts = std::move(built).value();

  // fsname may hold commas (mount(8) would split on them): escape it.
  char* mount_opts = nullptr;
  fuse_opt_add_opt(&mount_opts, "subtype=eventfs");
  fuse_opt_add_opt_escaped(&mount_opts, ("fsname=" + source).c_str());
  fuse_opt_add_opt(&mount_opts, "default_permissions");
  fuse_opt_add_arg(&args, "-o");
  fuse_opt_add_arg(&args, mount_opts);
  std::free(mount_opts);
  set_session_init(session_init);

  // A shutdown signal from here on waits for the loop, which answers it
  // cleanly; the threads started later inherit the mask.
  block_shutdown_signals();
  fuse_session* se = fuse_session_new(&args, &fuse_operations(), sizeof(fuse_lowlevel_ops), &parts->tree());
  if (!se) {  // libfuse has said why, in one line
    parts.reset();
    return 1;
  }
  if (fuse_session_mount(se, mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    parts.reset();
    die("cannot mount on " + mountpoint);
  }
  // The mount just made is the top one at its path; from now on it is known
  // by its id (another may be mounted on top of it).
  OwnMount own;
  if (!OwnMount::find(read_mountinfo(), mountpoint, own)) own.path = mountpoint;
  daemonize_until_served(opts.foreground);
  parts->start();  // threads only after the fork
  // Shutdown: readers waiting and reading get end of file, the mount goes,
  // and the loop answers what is still asked until the last file is closed.
  auto shut_down = [&] {
    parts->end_streams();
    unmount_own(own);
  };
  int rc = 0;
  bool requested = false;
  {
    SessionLoop loop(se, shut_down, std::chrono::seconds(2));
    // A lazy unmount leaves waiting readers in the kernel and sends the
    // daemon nothing: notice it and shut down as for SIGTERM.
    MountWatch watch(own, [&loop] { loop.request_shutdown(); });
    rc = loop.run(opts.single_thread, 10);
    requested = loop.shutdown_requested();
  }
  // The loop also ends when the kernel ends the connection (fusermount3 -u),
  // or on an error: the same clean-up, once.
  shut_down();
  parts->stop();
  destroy_session(se);
  release_open_files();
  fuse_opt_free_args(&args);
  for (char* o : {opts.tracefs, opts.catalog, opts.instance, opts.reader, opts.nice, opts.rt, opts.queue_kb, opts.gid}) std::free(o);
  // Triggers, then events, then the instance; a shutdown that had to leave
  // the instance behind has said why and is not a clean one.
  const bool removed = parts->remove_instance().ok();
  // A shutdown that was asked for is a clean one, whatever the loop says.
  return (rc == 0 || requested) && removed ? 0 : 1;
}
