#include "fuse/fuse_adapter.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "fs/node_tree.h"

namespace eventfs {
namespace {

// Nothing in the tree changes once the mount is up, so the kernel may keep
// names and attributes for long.
constexpr double kTimeout = 3600.0;

NodeTree& tree_of(fuse_req_t req) { return *static_cast<NodeTree*>(fuse_req_userdata(req)); }

// Runs `fn`; an exception becomes an errno reply, never crossing into C.
template <typename Fn>
void guarded(fuse_req_t req, Fn&& fn) {
  try {
    fn();
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  } catch (...) {
    fuse_reply_err(req, EIO);
  }
}

struct stat to_stat(const NodeAttr& a) {
  struct stat st {};
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size);
  st.st_blksize = 4096;
  st.st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  st.st_atim = st.st_mtim = st.st_ctim = a.time;
  return st;
}

OpenFile* file_of(fuse_file_info* fi) { return reinterpret_cast<OpenFile*>(fi->fh); }

// Open files the kernel has not released: at unmount it may never do so.
std::mutex open_mu;
std::unordered_set<OpenFile*> open_files;

SessionInit session_init;

void op_init(void*, fuse_conn_info* conn) {
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  conn->want &= conn->capable;  // libfuse refuses INIT when more is wanted
  if (session_init.max_read) conn->max_read = session_init.max_read;
  if (session_init.served) session_init.served();
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, [&] {
    NodeAttr a;
    if (int e = tree_of(req).lookup(parent, name, a)) return (void)fuse_reply_err(req, e);
    fuse_entry_param ep{};
    ep.ino = a.ino;
    ep.generation = 1;
    ep.attr = to_stat(a);
    ep.attr_timeout = kTimeout;
    ep.entry_timeout = kTimeout;
    fuse_reply_entry(req, &ep);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  guarded(req, [&] {
    NodeAttr a;
    if (int e = tree_of(req).getattr(ino, a)) return (void)fuse_reply_err(req, e);
    struct stat st = to_stat(a);
    fuse_reply_attr(req, &st, kTimeout);
  });
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat*, int to_set, fuse_file_info*) {
  guarded(req, [&] {
    // Truncation is how `>` opens a control file; it changes nothing here.
    if (to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                   FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME))
      return (void)fuse_reply_err(req, EPERM);
    NodeAttr a;
    if (int e = tree_of(req).getattr(ino, a)) return (void)fuse_reply_err(req, e);
    struct stat st = to_stat(a);
    fuse_reply_attr(req, &st, kTimeout);
  });
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, [&] {
    std::unique_ptr<OpenFile> f;
    bool immutable = false;
    if (int e = tree_of(req).open(ino, fi->flags, f, &immutable)) return (void)fuse_reply_err(req, e);
    if (immutable) {
      fi->keep_cache = 1;
      fi->noflush = 1;
    } else {
      fi->direct_io = 1;  // generated on every read, never cached
    }
    fi->fh = reinterpret_cast<uint64_t>(f.get());
    {
      std::lock_guard lock(open_mu);
      open_files.insert(f.get());
    }
    if (fuse_reply_open(req, fi) == 0) {
      f.release();  // the kernel's file owns it until RELEASE
    } else {
      std::lock_guard lock(open_mu);
      open_files.erase(f.get());
    }
  });
}

// A read answered later, from whichever thread has the data.
class FuseReadCompletion final : public ReadCompletion {
 public:
  explicit FuseReadCompletion(fuse_req_t req) : req_(req) {}
  ~FuseReadCompletion() override {
    if (!answered_) fuse_reply_err(req_, EIO);  // never leave a request without an answer
  }
  void done(int err, std::string_view data) override {
    answered_ = true;
    if (err)
      fuse_reply_err(req_, err);
    else
      fuse_reply_buf(req_, data.data(), data.size());
  }
  void done_parts(const std::string_view* parts, int n) override {
    iovec iov[4];
    if (n > 4) return ReadCompletion::done_parts(parts, n);  // joined, through done()
    answered_ = true;
    for (int i = 0; i < n; ++i) iov[i] = {const_cast<char*>(parts[i].data()), parts[i].size()};
    fuse_reply_iov(req_, iov, n);
  }
  bool interrupted() const override { return fuse_req_interrupted(req_); }
  const void* key() const override { return req_; }

 private:
  fuse_req_t req_;
  bool answered_ = false;
};

void on_interrupt(fuse_req_t req, void* sink) {
  try {
    static_cast<InterruptSink*>(sink)->interrupt(req);
  } catch (...) {
  }
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, [&] {
    OpenFile* f = file_of(fi);
    if (off < 0) return (void)fuse_reply_err(req, EINVAL);
    if (f->is_stream()) {
      // A stream read that waits is parked: no worker thread is held. From
      // here the completion alone answers the request, once: whoever holds it
      // answers, and if an exception drops it, its destructor does (EIO).
      // So nothing else may answer, whatever read_async throws.
      auto completion = std::make_unique<FuseReadCompletion>(req);
      // (The sink, not the open file: the file may be released while an
      // interrupt of this read is delivered on another thread.)
      if (InterruptSink* sink = f->interrupt_sink()) fuse_req_interrupt_func(req, on_interrupt, sink);
      try {
        f->read_async(static_cast<uint64_t>(off), size, fi->flags & O_NONBLOCK, std::move(completion));
      } catch (...) {
      }
      return;
    }
    std::string out;
    if (int e = f->read(static_cast<uint64_t>(off), size, out)) return (void)fuse_reply_err(req, e);
    fuse_reply_buf(req, out.data(), out.size());
  });
}

class FusePollNotifier final : public PollNotifier {
 public:
  explicit FusePollNotifier(fuse_pollhandle* ph) : ph_(ph) {}
  ~FusePollNotifier() override { fuse_pollhandle_destroy(ph_); }
  void notify() override { fuse_lowlevel_notify_poll(ph_); }

 private:
  fuse_pollhandle* ph_;
};

void op_poll(fuse_req_t req, fuse_ino_t, fuse_file_info* fi, fuse_pollhandle* ph) {
  guarded(req, [&] {
    std::unique_ptr<PollNotifier> n;
    if (ph) n = std::make_unique<FusePollNotifier>(ph);
    unsigned revents = file_of(fi)->poll(std::move(n));
    fuse_reply_poll(req, revents);
  });
}

void op_write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, [&] {
    size_t written = 0;
    if (int e = file_of(fi)->write(std::string_view(buf, size), static_cast<uint64_t>(off), written))
      return (void)fuse_reply_err(req, e);
    fuse_reply_write(req, written);
  });
}

void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) {
  fuse_reply_err(req, ENOSYS);  // the kernel then stops sending FLUSH
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  {
    std::lock_guard lock(open_mu);
    open_files.erase(file_of(fi));
  }
  delete file_of(fi);
  fuse_reply_err(req, 0);
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, [&] {
    if (int e = tree_of(req).opendir(ino)) return (void)fuse_reply_err(req, e);
    fi->cache_readdir = 1;  // listings never change while mounted
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
  });
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  guarded(req, [&] {
    std::vector<DirEntry> entries;
    if (int e = tree_of(req).readdir(ino, entries)) return (void)fuse_reply_err(req, e);
    std::vector<char> buf(size);
    size_t used = 0;
    for (size_t i = static_cast<size_t>(off); i < entries.size(); ++i) {
      struct stat st {};
      st.st_ino = entries[i].ino;
      st.st_mode = entries[i].mode;
      size_t need = fuse_add_direntry(req, buf.data() + used, size - used, entries[i].name.c_str(),
                                      &st, static_cast<off_t>(i + 1));
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, buf.data(), used);
  });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_statfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs s {};
  s.f_bsize = 4096;
  s.f_frsize = 4096;
  s.f_namemax = 255;
  fuse_reply_statfs(req, &s);
}

// The names under the mount are the kernel's to decide, as on tracefs.
void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EACCES); }
void op_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) {
  fuse_reply_err(req, EACCES);
}
void op_mkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EPERM); }
void op_unlink(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_rmdir(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EPERM); }
void op_rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
  fuse_reply_err(req, EPERM);
}

fuse_lowlevel_ops make_ops() {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
  ops.open = op_open;
  ops.read = op_read;
  ops.poll = op_poll;
  ops.write = op_write;
  ops.flush = op_flush;
  ops.release = op_release;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.releasedir = op_releasedir;
  ops.statfs = op_statfs;
  ops.mknod = op_mknod;
  ops.create = op_create;
  ops.mkdir = op_mkdir;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.rename = op_rename;
  return ops;
}

}  // namespace

void set_session_init(const SessionInit& init) { session_init = init; }

void release_open_files() {
  std::unordered_set<OpenFile*> left;
  {
    std::lock_guard lock(open_mu);
    left.swap(open_files);
  }
  for (OpenFile* f : left) delete f;
}

const fuse_lowlevel_ops& fuse_operations() {
  static const fuse_lowlevel_ops ops = make_ops();
  return ops;
}

}  // namespace eventfs
