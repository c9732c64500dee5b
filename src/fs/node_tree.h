// The inode tree of the mount, independent of FUSE: directories, files and
// what reading or writing them does. Every operation returns 0 or an errno.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <ctime>
#include <cerrno>
#include <string_view>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace eventfs {

// The answer to a read that may wait (a stream): called exactly once, from
// whichever thread has the data, an error, or the interruption.
class ReadCompletion {
 public:
  virtual ~ReadCompletion() = default;
  virtual void done(int err, std::string_view data) = 0;
  // The data in pieces (answered without joining them where the transport
  // can: FUSE's writev); by default joined and given to done().
  virtual void done_parts(const std::string_view* parts, int n) {
    std::string all;
    for (int i = 0; i < n; ++i) all.append(parts[i]);
    done(0, all);
  }
  // Whether the reader has given up (a signal): then answer EINTR.
  virtual bool interrupted() const = 0;
  // Identifies the request, for interrupt().
  virtual const void* key() const = 0;
};

// Wakes a poll(2)/select(2)/epoll waiter once.
class PollNotifier {
 public:
  virtual ~PollNotifier() = default;
  virtual void notify() = 0;
};

// Where the interrupts of a file's waiting reads go. It lives as long as the
// mount: an open file may be released while an interrupt of one of its reads
// is being delivered on another thread.
class InterruptSink {
 public:
  virtual ~InterruptSink() = default;
  // The request `key` was interrupted: answer it with EINTR if it waits.
  virtual void interrupt(const void* key) = 0;
};

// One open of a file: reads and writes go here.
class OpenFile {
 public:
  virtual ~OpenFile() = default;
  virtual int read(std::uint64_t offset, std::size_t count, std::string& out) = 0;
  // tracefs answers a write to a read-only file with EINVAL.
  virtual int write(std::string_view data, std::uint64_t offset, std::size_t& written) {
    (void)data, (void)offset, (void)written;
    return EINVAL;
  }

  // Streams answer reads asynchronously: a read with no data waits without
  // holding a thread (nonblock: EAGAIN instead), and is answered when data
  // comes, when it is interrupted, or when the mount goes away.
  virtual bool is_stream() const { return false; }
  virtual void read_async(std::uint64_t offset, std::size_t count, bool /*nonblock*/,
                          std::unique_ptr<ReadCompletion> c) {
    std::string out;
    int e = read(offset, count, out);
    c->done(e, out);
  }
  // Where interrupts of its waiting reads go (nullptr: its reads never wait).
  virtual InterruptSink* interrupt_sink() { return nullptr; }
  // Returns the ready events (POLLIN...); keeps `n` to wake the poller later
  // when nothing is ready.
  virtual unsigned poll(std::unique_ptr<PollNotifier> n) {
    (void)n;
    return 0x001 | 0x004;  // POLLIN | POLLOUT: regular files are always ready
  }
};

// What a regular file does. Immutable files have contents fixed for the life
// of the mount, so the kernel may cache them; the others are read afresh.
class FileBehaviour {
 public:
  virtual ~FileBehaviour() = default;
  virtual bool immutable() const = 0;
  // Size reported by getattr: the real size for immutable files, 0 for
  // generated ones (as tracefs does).
  virtual int size(std::uint64_t& out) = 0;
  // `flags` are open(2)'s; O_TRUNC arrives here (atomic_o_trunc).
  virtual int open(int flags, std::unique_ptr<OpenFile>& out) = 0;
};

// A file whose text is generated on first use and then kept.
class ConstantFile final : public FileBehaviour {
 public:
  using Generator = std::function<int(std::string& out)>;
  explicit ConstantFile(std::string text);
  explicit ConstantFile(Generator gen);
  bool immutable() const override { return true; }
  int size(std::uint64_t& out) override;
  int open(int flags, std::unique_ptr<OpenFile>& out) override;
  int read(std::uint64_t offset, std::size_t count, std::string& out);

 private:
  int text(const std::string*& out);
  std::once_flag once_;
  Generator gen_;
  std::string text_;
  int error_ = 0;
};

// What a write left with one open of a control file (a held enable): kept
// until the open is released, then destroyed.
class OpenHold {
 public:
  virtual ~OpenHold() = default;
};

// A control file: its text is generated when a reader starts at offset 0 (as
// seq_file does), and each write(2) is one command.
class ControlFile final : public FileBehaviour {
 public:
  using Reader = std::function<int(std::string& out)>;
  using Writer = std::function<int(std::string_view data)>;
  // A writer that may leave a hold with the open it was written through
  // (`held` is that open's, empty until a write fills it).
  using HoldingWriter = std::function<int(std::string_view data, std::unique_ptr<OpenHold>& held)>;
  using Truncator = std::function<void()>;
  ControlFile(Reader r, Writer w, Truncator t = nullptr)
      : reader_(std::move(r)), writer_(std::move(w)), truncator_(std::move(t)) {}
  static std::shared_ptr<ControlFile> with_holds(Reader r, HoldingWriter w) {
    auto f = std::make_shared<ControlFile>(std::move(r), nullptr);
    f->holding_writer_ = std::move(w);
    return f;
  }
  bool immutable() const override { return false; }
  int size(std::uint64_t& out) override {
    out = 0;
    return 0;
  }
  int open(int flags, std::unique_ptr<OpenFile>& out) override;

 private:
  Reader reader_;
  Writer writer_;
  HoldingWriter holding_writer_;
  Truncator truncator_;
};

struct Node {
  std::uint64_t ino = 0;
  Node* parent = nullptr;
  std::string name;
  mode_t mode = 0;  // S_IFDIR/S_IFREG | permissions
  bool is_dir() const { return S_ISDIR(mode); }

  // Directories: children by name, filled on first use when `populate` is set.
  std::map<std::string, Node*> children;
  std::function<void(Node& self)> populate;
  bool populated = false;

  // Regular files.
  std::shared_ptr<FileBehaviour> file;
};

struct NodeAttr {
  std::uint64_t ino = 0;
  mode_t mode = 0;
  std::uint64_t size = 0;
  unsigned nlink = 1;
  uid_t uid = 0;
  gid_t gid = 0;
  struct timespec time {};
};

struct DirEntry {
  std::string name;
  std::uint64_t ino;
  mode_t mode;
};

class NodeTree {
 public:
  static constexpr std::uint64_t kRootIno = 1;
  static constexpr mode_t kDirMode = S_IFDIR | 0755;
  static constexpr mode_t kReadOnlyMode = S_IFREG | 0440;
  static constexpr mode_t kReadWriteMode = S_IFREG | 0640;
  static constexpr mode_t kWriteOnlyMode = S_IFREG | 0200;

  NodeTree();
  Node& root() { return *root_; }

  // Building (before the mount is served, or from a populate callback,
  // which runs without the tree's lock: each takes it for itself).
  Node& add_dir(Node& parent, const std::string& name,
                std::function<void(Node&)> populate = nullptr);
  Node& add_file(Node& parent, const std::string& name, mode_t mode,
                 std::shared_ptr<FileBehaviour> file);

  // Serving; safe from many threads.
  int lookup(std::uint64_t parent, const std::string& name, NodeAttr& out);
  int getattr(std::uint64_t ino, NodeAttr& out);
  int readdir(std::uint64_t ino, std::vector<DirEntry>& out);
  // `immutable` (if given) says whether the kernel may cache the file.
  int open(std::uint64_t ino, int flags, std::unique_ptr<OpenFile>& out, bool* immutable = nullptr);
  int opendir(std::uint64_t ino);

  void set_owner(uid_t uid, gid_t gid);

 private:
  Node* find(std::uint64_t ino);  // mu_ held
  // Fills a directory's children on first use: without mu_ (a populate
  // callback may read kernel files), one directory at a time.
  void ensure_populated(Node& n);
  // The directory `ino`, populated; nullptr and `err` if it is none.
  Node* dir_ready(std::uint64_t ino, int& err);
  // Everything but a file's size (mu_ held); the file, whose size() is then
  // asked without mu_ (it may generate the text: a raw format's parse).
  FileBehaviour* attr_of(Node& n, NodeAttr& out);
  static int with_size(FileBehaviour* f, NodeAttr& out);

  std::mutex populate_mu_;  // one population at a time; taken before mu_, never under it
  std::mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_;  // index ino - 1
  Node* root_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  struct timespec created_ {};
};

}  // namespace eventfs
