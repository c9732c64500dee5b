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
#include <utility>
#include <vector>

#include "fs/node_tree.h"

namespace eventfs {
namespace {

// Nothing in the tree changes once the mount is up, so the kernel may keep
// names and attributes for long.
constexpr double kTimeout = 3600.0;

NodeTree& tree_of(fuse_req_t req) { return *static_cast<NodeTree*>(fuse_req_userdata(req)); }

// The answer to one request. The first reply gives the request up, so no
// path can answer it twice; one dropped unanswered is answered EIO, so none
// is left waiting. It moves to whoever answers later (a parked stream read).
class Reply {
 public:
  explicit Reply(fuse_req_t req) : req_(req) {}
  Reply(Reply&& o) noexcept : req_(std::exchange(o.req_, nullptr)) {}
  Reply& operator=(Reply&&) = delete;
  ~Reply() { err(EIO); }

  // The request while unanswered (nullptr after), for calls that read it.
  fuse_req_t req() const { return req_; }
  void err(int e) {
    if (fuse_req_t r = take()) fuse_reply_err(r, e);
  }
  void buf(const char* data, size_t n) {
    if (fuse_req_t r = take()) fuse_reply_buf(r, data, n);
  }
  void iov(const iovec* v, int n) {
    if (fuse_req_t r = take()) fuse_reply_iov(r, v, n);
  }
  void entry(const fuse_entry_param& e) {
    if (fuse_req_t r = take()) fuse_reply_entry(r, &e);
  }
  void attr(const struct stat& st) {
    if (fuse_req_t r = take()) fuse_reply_attr(r, &st, kTimeout);
  }
  // 0 if the kernel took the answer (an interrupted OPEN may not).
  int open(const fuse_file_info& fi) {
    fuse_req_t r = take();
    return r ? fuse_reply_open(r, &fi) : -EALREADY;
  }
  void write(size_t n) {
    if (fuse_req_t r = take()) fuse_reply_write(r, n);
  }
  void poll(unsigned revents) {
    if (fuse_req_t r = take()) fuse_reply_poll(r, revents);
  }

 private:
  fuse_req_t take() { return std::exchange(req_, nullptr); }
  fuse_req_t req_;
};

// Runs `fn` with the request's Reply; an exception becomes an errno reply
// (unless `fn` answered or handed the Reply on), never crossing into C.
template <typename Fn>
void guarded(fuse_req_t req, Fn&& fn) {
  Reply r(req);
  try {
    fn(r);
  } catch (const std::bad_alloc&) {
    r.err(ENOMEM);
  } catch (...) {
    r.err(EIO);
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
  guarded(req, [&](Reply& r) {
    NodeAttr a;
    if (int e = tree_of(req).lookup(parent, name, a)) return r.err(e);
    fuse_entry_param ep{};
    ep.ino = a.ino;
    ep.generation = 1;
    ep.attr = to_stat(a);
    ep.attr_timeout = kTimeout;
    ep.entry_timeout = kTimeout;
    r.entry(ep);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }

void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  guarded(req, [&](Reply& r) {
    NodeAttr a;
    if (int e = tree_of(req).getattr(ino, a)) return r.err(e);
    struct stat st = to_stat(a);
    r.attr(st);
  });
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat*, int to_set, fuse_file_info*) {
  guarded(req, [&](Reply& r) {
    // Truncation is how `>` opens a control file; it changes nothing here.
    if (to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                   FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME))
      return r.err(EPERM);
    NodeAttr a;
    if (int e = tree_of(req).getattr(ino, a)) return r.err(e);
    struct stat st = to_stat(a);
    r.attr(st);
  });
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, [&](Reply& r) {
    std::unique_ptr<OpenFile> f;
    bool immutable = false;
    if (int e = tree_of(req).open(ino, fi->flags, f, &immutable)) return r.err(e);
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
    if (r.open(*fi) == 0) {
      f.release();  // the kernel's file owns it until RELEASE
    } else {
      std::lock_guard lock(open_mu);
      open_files.erase(f.get());
    }
  });
}

// A read answered later, from whichever thread has the data: it holds the
// request's Reply, so it answers once, and EIO if dropped unanswered.
class FuseReadCompletion final : public ReadCompletion {
 public:
  explicit FuseReadCompletion(Reply&& reply) : key_(reply.req()), reply_(std::move(reply)) {}
  void done(int err, std::string_view data) override {
    if (err)
      reply_.err(err);
    else
      reply_.buf(data.data(), data.size());
  }
  void done_parts(const std::string_view* parts, int n) override {
    iovec iov[4];
    if (n > 4) return ReadCompletion::done_parts(parts, n);  // joined, through done()
    for (int i = 0; i < n; ++i) iov[i] = {const_cast<char*>(parts[i].data()), parts[i].size()};
    reply_.iov(iov, n);
  }
  bool interrupted() const override { return reply_.req() && fuse_req_interrupted(reply_.req()); }
  const void* key() const override { return key_; }

 private:
  const void* key_;
  Reply reply_;
};

void on_interrupt(fuse_req_t req, void* sink) {
  try {
    static_cast<InterruptSink*>(sink)->interrupt(req);
  } catch (...) {
  }
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, [&](Reply& r) {
    OpenFile* f = file_of(fi);
    if (off < 0) return r.err(EINVAL);
    if (f->is_stream()) {
      // A stream read that waits is parked: no worker thread is held. The
      // Reply moves into the completion, which alone answers from here.
      // (The sink, not the open file: the file may be released while an
      // interrupt of this read is delivered on another thread.)
      if (InterruptSink* sink = f->interrupt_sink()) fuse_req_interrupt_func(req, on_interrupt, sink);
      f->read_async(static_cast<uint64_t>(off), size, fi->flags & O_NONBLOCK,
                    std::make_unique<FuseReadCompletion>(std::move(r)));
      return;
    }
    std::string out;
    if (int e = f->read(static_cast<uint64_t>(off), size, out)) return r.err(e);
    r.buf(out.data(), out.size());
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
  guarded(req, [&](Reply& r) {
    std::unique_ptr<PollNotifier> n;
    if (ph) n = std::make_unique<FusePollNotifier>(ph);
    unsigned revents = file_of(fi)->poll(std::move(n));
    r.poll(revents);
  });
}

void op_write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, [&](Reply& r) {
    size_t written = 0;
    if (int e = file_of(fi)->write(std::string_view(buf, size), static_cast<uint64_t>(off), written))
      return r.err(e);
    r.write(written);
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
  guarded(req, [&](Reply& r) {
    if (int e = tree_of(req).opendir(ino)) return r.err(e);
    fi->cache_readdir = 1;  // listings never change while mounted
    fi->keep_cache = 1;
    r.open(*fi);
  });
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  guarded(req, [&](Reply& r) {
    std::vector<DirEntry> entries;
    if (int e = tree_of(req).readdir(ino, entries)) return r.err(e);
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
    r.buf(buf.data(), used);
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
