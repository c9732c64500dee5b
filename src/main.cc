// eventfs: the session's life: start-up, the loop, shutdown. The options
// are options.cc's.
//
// Everything that can fail is checked before the mount is made, so a bad
// option, catalog or mount point gives one line on stderr and a non-zero exit;
// the daemon goes to the background only once the mount is up.
#include <sys/mount.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "catalog/parser.h"
#include "eventfs_config.h"
#include "fuse/fuse_adapter.h"
#include "fuse/session_loop.h"
#include "mount/mount_parts.h"
#include "mount/mount_watch.h"
#include "options.h"
#include "tracefs/locate.h"

namespace {

using namespace eventfs;

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "eventfs: %s\n", msg.c_str());
  std::exit(1);
}

bool has_catalog_files(const char* dir) {
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(dir, ec))
    if (de.path().extension() == ".catalog") return true;
  return false;
}

Catalog load_catalog_or_die(const DaemonOptions& o) {
  Catalog cat;
  CatalogResult loaded;
  if (o.catalog)
    loaded = load_catalog(*o.catalog, cat);
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

std::string tracefs_root_or_die(const DaemonOptions& o) {
  auto root = o.tracefs ? given_tracefs(*o.tracefs) : locate_tracefs();
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

// Each CPU takes four descriptors while streams are open (its ring, the two
// ends of its splice pipe, its drainer's eventfd): a machine of a few
// hundred CPUs would reach the usual soft limit of 1024.
// The soft limit goes up to the hard one, as far as that allows.
static void raise_open_files_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &lim);
}

int main(int argc, char* argv[]) {
  // Static: what they hold stays reachable whichever way the process ends.
  static fuse_args args = FUSE_ARGS_INIT(argc, argv);
  static DaemonOptions opts;
  {
    auto parsed = parse_daemon_options(args);
    if (!parsed) {
      if (parsed.error().show_usage) print_usage(stderr);
      if (!parsed.error().message.empty()) std::fprintf(stderr, "eventfs: %s\n", parsed.error().message.c_str());
      fuse_opt_free_args(&args);
      return 1;
    }
    opts = std::move(parsed).value();
  }
  if (opts.help || opts.version) {
    if (opts.help)
      print_usage(stdout);
    else
      std::printf("eventfs %s (libfuse %s)\n", EVENTFS_VERSION, fuse_pkgversion());
    fuse_opt_free_args(&args);
    return 0;
  }
  raise_open_files_limit();
  SessionInit session_init;
  session_init.max_read = opts.max_read;
  session_init.served = serving_started;

  MountConfig config;
  config.tracefs_root = tracefs_root_or_die(opts);
  if (opts.instance) config.instance_name = *opts.instance;
  config.reader_mode = opts.reader_mode;
  config.queue_bytes = opts.queue_bytes;
  config.drainer_nice = opts.drainer_nice;
  config.drainer_fifo = opts.drainer_fifo;
  config.group = opts.group;
  Result<std::unique_ptr<MountParts>> built = MountParts::build(load_catalog_or_die(opts), config);
  if (!built) die(built.reason());
  std::unique_ptr<MountParts> parts = std::move(built).value();

  // fsname may hold commas (mount(8) would split on them): escape it.
  char* mount_opts = nullptr;
  fuse_opt_add_opt(&mount_opts, "subtype=eventfs");
  fuse_opt_add_opt_escaped(&mount_opts, ("fsname=" + opts.source).c_str());
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
  if (fuse_session_mount(se, opts.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    parts.reset();
    die("cannot mount on " + opts.mountpoint);
  }
  // The mount just made is the top one at its path; from now on it is known
  // by its id (another may be mounted on top of it).
  OwnMount own;
  if (!OwnMount::find(read_mountinfo(), opts.mountpoint, own)) own.path = opts.mountpoint;
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
  // Triggers, then events, then the instance; a shutdown that had to leave
  // the instance behind has said why and is not a clean one.
  const bool removed = parts->remove_instance().ok();
  // A shutdown that was asked for is a clean one, whatever the loop says.
  return (rc == 0 || requested) && removed ? 0 : 1;
}
