#include "tracefs/instance.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tracefs/file_io.h"

#include "tracefs/libtracefs_calls.h"

namespace eventfs {
namespace {

constexpr long kTracefsMagic = 0x74726163;  // TRACEFS_MAGIC
constexpr const char* kOwnerDir = "/run/eventfs";
// How long removal waits for processes that hold the instance's files.
constexpr auto kRemoveWait = std::chrono::seconds(3);

std::vector<std::string> subdirs(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (!d) return out;
  while (dirent* de = readdir(d))
    if (de->d_type == DT_DIR && std::strcmp(de->d_name, ".") && std::strcmp(de->d_name, ".."))
      out.emplace_back(de->d_name);
  closedir(d);
  return out;
}

// "enable_event:sched:x:count=3 if a == 1" -> "!enable_event:sched:x"
std::string removal_of(const std::string& line) {
  std::string cmd = line.substr(0, line.find(" if "));
  if (auto sp = cmd.find(' '); sp != std::string::npos) cmd = cmd.substr(0, sp);
  if (cmd.rfind("hist", 0) == 0) return "!" + cmd;
  auto colon = cmd.rfind(':');
  if (colon != std::string::npos) {
    std::string last = cmd.substr(colon + 1);
    if (last == "unlimited" || last.rfind("count=", 0) == 0) cmd = cmd.substr(0, colon);
  }
  return "!" + cmd;
}

// A process that has exited but not been reaped no longer owns anything.
bool alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(in, stat)) return false;
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

// The start time of a process (field 22 of /proc/PID/stat), to tell a live
// owner from a recycled pid; empty if there is no such process.
std::string start_time_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(in, stat)) return {};
  auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 22 && rest >> f; ++i)
    if (i == 22) return f;
  return {};
}

// The record names the daemon (pid and start time, so a recycled pid does
// not count) and the instance directory it made (its inode, so an instance
// someone else made later under the same name is not taken for it).
struct Owner {
  pid_t pid = 0;
  std::string start;
  ino_t ino = 0;
  std::string root;
};

bool read_owner(const std::string& name, Owner& o) {
  std::ifstream in(Instance::owner_record(name));
  return static_cast<bool>(in >> o.pid >> o.start >> o.ino >> o.root);
}

// Written whole to a temporary file and renamed into place, so a reader
// never sees a torn record.
Status write_owner(const std::string& name, const std::string& root, const std::string& dir) {
  std::string path = Instance::owner_record(name);
  auto failed = [&](int e) {
    return fail(e, fmt::format("cannot record the owner of {} in {}: {}", dir, path, std::strerror(e)));
  };
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return failed(errno);
  mkdir(kOwnerDir, 0755);
  std::string tmp = fmt::format("{}.{}.tmp", path, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << getpid() << ' ' << start_time_of(getpid()) << ' ' << st.st_ino << ' ' << root << '\n';
    if (!out.flush()) {
      unlink(tmp.c_str());
      return failed(EIO);
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    return failed(e);
  }
  return {};
}

}  // namespace

bool is_tracefs(const std::string& path) {
  struct statfs s;
  return statfs(path.c_str(), &s) == 0 && s.f_type == kTracefsMagic;
}

bool is_tracefs_fd(int fd) {
  struct statfs s;
  return fstatfs(fd, &s) == 0 && s.f_type == kTracefsMagic;
}

std::vector<std::string> Instance::names_starting(const std::string& root, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir((root + "/instances").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  closedir(d);
  return out;
}

std::string Instance::owner_record(const std::string& name) {
  return fmt::format("{}/{}.owner", kOwnerDir, name);
}

namespace {

// Removes every trigger of the instance, then disables all its events. An
// enable_event trigger holds its target event, so triggers go first.
void clear(tracefs_instance* inst, const std::string& root) {
  char** systems = eventfs_tracefs_event_systems(root.c_str());
  for (char** sys = systems; sys && *sys; ++sys) {
    char** events = eventfs_tracefs_system_events(root.c_str(), *sys);
    for (char** ev = events; ev && *ev; ++ev) {
      int size = 0;
      char* text = eventfs_tracefs_event_file_read(inst, *sys, *ev, "trigger", &size);
      if (!text) continue;
      std::istringstream lines(std::string(text, static_cast<std::size_t>(std::max(size, 0))));
      std::free(text);
      std::string line;
      while (std::getline(lines, line))
        if (!line.empty() && line[0] != '#') eventfs_tracefs_event_file_append(inst, *sys, *ev, "trigger", removal_of(line).c_str());
    }
    eventfs_tracefs_list_free(events);
  }
  eventfs_tracefs_list_free(systems);
  eventfs_tracefs_event_disable_all(inst);
}

}  // namespace

Instance::Instance(std::string root, std::string name)
    : root_(std::move(root)),
      name_(std::move(name)),
      path_(root_ + "/instances/" + name_),
      handle_(nullptr) {}

Instance::~Instance() {
  (void)remove();  // says why on stderr when it cannot
  eventfs_tracefs_instance_free(handle_);
}

Result<std::unique_ptr<Instance>> Instance::open(const std::string& root, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return fail(EINVAL, fmt::format("instance={}: not a valid instance name", name));
  std::unique_ptr<Instance> inst(new Instance(root, name));
  struct stat st;
  if (stat(inst->path_.c_str(), &st) == 0) {
    Owner o;
    // (There is one tracefs, whatever path it was found at: the root is not compared.)
    if (!read_owner(name, o) || o.ino != st.st_ino)
      return fail(EEXIST, fmt::format("tracefs instance {} exists and was not made by eventfs; leaving it alone "
                                      "(remove it with rmdir, or choose another with -o instance=NAME)",
                                      inst->path_));
    if (alive(o.pid) && start_time_of(o.pid) == o.start)
      return fail(EBUSY, fmt::format(
                             "tracefs instance {} is in use by eventfs (pid {}); choose another with -o instance=NAME",
                             inst->path_, o.pid));
    // Left behind by a daemon that was killed: reclaim it.
    tracefs_instance* stale = eventfs_tracefs_instance_alloc(root.c_str(), name.c_str());
    if (stale) clear(stale, root);
    errno = 0;
    const bool gone = stale && eventfs_tracefs_instance_destroy(stale) == 0;
    const int e = gone ? 0 : errno ? errno : EIO;
    eventfs_tracefs_instance_free(stale);
    if (!gone) return fail(e, fmt::format("cannot reclaim the stale instance {}: {}", inst->path_, std::strerror(e)));
  }
  // (Made here, not with tracefs_instance_create(): that makes it under
  // libtracefs's own idea of the tracing directory, and eventfs makes it
  // under the tracefs it was given or found.)
  if (mkdir(inst->path_.c_str(), 0755) != 0) {
    int e = errno;
    return fail(e, fmt::format("cannot create tracefs instance {}: {}", inst->path_, std::strerror(e)));
  }
  // libtracefs's handle needs the instance to exist.
  inst->handle_ = eventfs_tracefs_instance_alloc(root.c_str(), name.c_str());
  if (!inst->handle_) {
    int e = errno ? errno : ENOMEM;
    rmdir(inst->path_.c_str());
    return fail(e, fmt::format("cannot open tracefs instance {}: {}", inst->path_, std::strerror(e)));
  }
  inst->owned_ = true;
  if (Status owner = write_owner(name, root, inst->path_); !owner) {
    eventfs_tracefs_instance_destroy(inst->handle_);
    return owner.error();
  }
  return inst;
}

// On older kernels (5.10 and 6.1; 6.12 keeps it per instance) one global flag says whether
// the rings were expanded: the top level boots with one page per CPU and
// grows to its configured size at the first use of tracing (an event's
// enable written, in any instance), while resizing any instance sets the
// flag without growing the top level's, which then stays at one page for
// the user's own tracing. Such a kernel shows buffer_size_kb as "S
// (expanded: N)" until then; there an events/enable written "0" in this
// instance (which has nothing enabled yet, or is told again that nothing
// is) makes that first use before the resize, so the top level grows as it
// would have for the user.
Status Instance::set_buffer_kb(unsigned kb) const {
  if (auto text = read("buffer_size_kb"); text && unexpanded_size_kb(*text))
    (void)write("events/enable", "0");
  return write("buffer_size_kb", std::to_string(kb));
}

std::optional<unsigned long> unexpanded_size_kb(std::string_view text) {
  static constexpr std::string_view kMark = "(expanded: ";
  const std::size_t at = text.find(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  unsigned long kb = 0;
  std::size_t i = at + kMark.size(), digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 10; ++i, ++digits)
    kb = kb * 10 + static_cast<unsigned long>(text[i] - '0');
  if (digits == 0 || i >= text.size() || text[i] != ')' || kb == 0) return std::nullopt;
  return kb;
}

int Instance::cpus() const {
  int n = 0;
  for (const auto& d : subdirs(path_ + "/per_cpu"))
    if (d.rfind("cpu", 0) == 0) ++n;
  return n;
}

Status Instance::record_owner() { return write_owner(name_, root_, path_); }

Status Instance::remove() {
  if (!owned_) return {};
  owned_ = false;
  clear(handle_, root_);
  // The kernel refuses (EBUSY) while a process holds one of the instance's
  // files open (a trace_marker writer, a reader of its trace): wait a while
  // for it to let go.
  int err = 0;
  for (auto deadline = std::chrono::steady_clock::now() + kRemoveWait;;) {
    errno = 0;
    if (eventfs_tracefs_instance_destroy(handle_) == 0 || errno == ENOENT) {
      err = 0;
      break;
    }
    err = errno;
    if (err != EBUSY || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (err) {
    // Cleared and disabled, but still there: the owner record stays, so that
    // the next daemon with this name reclaims it instead of refusing it.
    Error why = fail(err, fmt::format("cannot remove the tracefs instance {}: {} (a process holds one of its files); it "
                                      "is left cleared and disabled, and the next eventfs with -o instance={} reclaims it",
                                      path_, std::strerror(err), name_));
    std::fprintf(stderr, "eventfs: %s\n", why.reason.c_str());
    return why;
  }
  unlink(owner_record(name_).c_str());
  return {};
}

Error Instance::failed(const std::string& rel, int err, int otherwise) const {
  const int e = err ? err : otherwise;
  return fail(e, fmt::format("{}/{}: {}", path_, rel, std::strerror(e)));
}

Result<std::string> Instance::read(const std::string& rel) const {
  errno = 0;
  int size = 0;
  char* text = eventfs_tracefs_instance_file_read(handle_, rel.c_str(), &size);
  if (!text) {
    if (errno) return failed(rel, errno, EIO);
    return std::string();  // an empty file
  }
  std::string out(text, static_cast<std::size_t>(std::max(size, 0)));
  std::free(text);
  return out;
}

Status Instance::write(const std::string& rel, std::string_view data) const {
  // Appended (O_APPEND, never O_TRUNC, which clears a trigger file's hist
  // triggers), one write(2); the kernel reads the text to its first NUL.
  const std::string text(data);
  errno = 0;
  if (eventfs_tracefs_instance_file_append(handle_, rel.c_str(), text.c_str()) < 0) return failed(rel, errno, EIO);
  return {};
}

Status Instance::truncate(const std::string& rel) const {
  errno = 0;
  if (eventfs_tracefs_instance_file_clear(handle_, rel.c_str()) < 0) return failed(rel, errno, EIO);
  return {};
}

Status Instance::disable_option(const std::string& option) const {
  errno = 0;
  if (eventfs_tracefs_option_disable(handle_, option.c_str()) < 0) return failed("options/" + option, errno, EINVAL);
  return {};
}

Status Instance::set_subbuf_kb(unsigned kb) const { return write("buffer_subbuf_size_kb", std::to_string(kb)); }

}  // namespace eventfs
