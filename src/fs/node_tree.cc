#include "fs/node_tree.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <ctime>

namespace eventfs {

ConstantFile::ConstantFile(std::string text) : text_(std::move(text)) {
  std::call_once(once_, [] {});
}

ConstantFile::ConstantFile(Generator gen) : gen_(std::move(gen)) {}

int ConstantFile::text(const std::string*& out) {
  std::call_once(once_, [this] { error_ = gen_(text_); });
  out = &text_;
  return error_;
}

int ConstantFile::size(std::uint64_t& out) {
  const std::string* t = nullptr;
  if (int e = text(t)) return e;
  out = t->size();
  return 0;
}

int ConstantFile::read(std::uint64_t offset, std::size_t count, std::string& out) {
  const std::string* t = nullptr;
  if (int e = text(t)) return e;
  if (offset >= t->size()) {
    out.clear();
    return 0;
  }
  out = t->substr(offset, count);
  return 0;
}

namespace {

class ConstantOpen final : public OpenFile {
 public:
  explicit ConstantOpen(ConstantFile& f) : f_(f) {}
  int read(std::uint64_t offset, std::size_t count, std::string& out) override {
    return f_.read(offset, count, out);
  }

 private:
  ConstantFile& f_;
};

// One open of a control file. Several threads may read one open file at
// once (pread(2) on a shared descriptor): the text a reader at offset 0
// generates replaces the kept one under the lock, and each read copies from
// the kept text under the same lock.
class ControlOpen final : public OpenFile {
 public:
  ControlOpen(const ControlFile::Reader& r, const ControlFile::Writer& w, const ControlFile::HoldingWriter& hw)
      : reader_(r), writer_(w), holding_writer_(hw) {}
  int read(std::uint64_t offset, std::size_t count, std::string& out) override {
    std::lock_guard lock(mu_);
    if (offset == 0 || !have_) {
      std::string fresh;
      if (int e = reader_(fresh)) return e;
      text_ = std::move(fresh);
      have_ = true;
    }
    out = offset < text_.size() ? text_.substr(offset, count) : std::string();
    return 0;
  }
  int write(std::string_view data, std::uint64_t, std::size_t& written) override {
    if (holding_writer_) {
      std::lock_guard lock(hold_mu_);
      if (int e = holding_writer_(data, held_)) return e;
    } else {
      if (!writer_) return EINVAL;
      if (int e = writer_(data)) return e;
    }
    written = data.size();
    return 0;
  }

 private:
  const ControlFile::Reader& reader_;
  const ControlFile::Writer& writer_;
  const ControlFile::HoldingWriter& holding_writer_;
  std::mutex hold_mu_;  // one write at a time may fill held_
  std::unique_ptr<OpenHold> held_;  // guarded by hold_mu_; ends with the open
  std::mutex mu_;
  std::string text_;  // guarded by mu_
  bool have_ = false;  // guarded by mu_
};

}  // namespace

int ConstantFile::open(int, std::unique_ptr<OpenFile>& out) {
  out = std::make_unique<ConstantOpen>(*this);
  return 0;
}

int ControlFile::open(int flags, std::unique_ptr<OpenFile>& out) {
  if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && truncator_) truncator_();
  out = std::make_unique<ControlOpen>(reader_, writer_, holding_writer_);
  return 0;
}

NodeTree::NodeTree() {
  clock_gettime(CLOCK_REALTIME, &created_);
  auto root = std::make_unique<Node>();
  root->ino = kRootIno;
  root->mode = kDirMode;
  root->populated = true;
  root->parent = root.get();
  root_ = root.get();
  nodes_.push_back(std::move(root));
}

Node& NodeTree::add_dir(Node& parent, const std::string& name, std::function<void(Node&)> populate) {
  std::lock_guard lock(mu_);
  auto n = std::make_unique<Node>();
  n->ino = nodes_.size() + 1;
  n->parent = &parent;
  n->name = name;
  n->mode = kDirMode;
  n->populate = std::move(populate);
  n->populated = !n->populate;
  Node* p = n.get();
  parent.children[name] = p;
  nodes_.push_back(std::move(n));
  return *p;
}

Node& NodeTree::add_file(Node& parent, const std::string& name, mode_t mode,
                         std::shared_ptr<FileBehaviour> file) {
  std::lock_guard lock(mu_);
  auto n = std::make_unique<Node>();
  n->ino = nodes_.size() + 1;
  n->parent = &parent;
  n->name = name;
  n->mode = mode;
  n->file = std::move(file);
  Node* p = n.get();
  parent.children[name] = p;
  nodes_.push_back(std::move(n));
  return *p;
}

Node* NodeTree::find(std::uint64_t ino) {
  if (ino == 0 || ino > nodes_.size()) return nullptr;
  return nodes_[ino - 1].get();
}

void NodeTree::ensure_populated(Node& n) {
  std::lock_guard populating(populate_mu_);
  std::function<void(Node&)> fill;
  {
    std::lock_guard lock(mu_);
    if (n.populated) return;
    fill = std::move(n.populate);
  }
  if (fill) fill(n);  // its add_dir()/add_file() take mu_ one at a time
  std::lock_guard lock(mu_);
  n.populated = true;
}

Node* NodeTree::dir_ready(std::uint64_t ino, int& err) {
  Node* n;
  bool populated;
  {
    std::lock_guard lock(mu_);
    n = find(ino);
    if (!n) {
      err = ENOENT;
      return nullptr;
    }
    if (!n->is_dir()) {
      err = ENOTDIR;
      return nullptr;
    }
    populated = n->populated;
  }
  if (!populated) ensure_populated(*n);
  err = 0;
  return n;
}

FileBehaviour* NodeTree::attr_of(Node& n, NodeAttr& out) {
  out = {};
  out.ino = n.ino;
  out.mode = n.mode;
  out.uid = uid_;
  out.gid = gid_;
  out.time = created_;
  if (n.is_dir()) {
    // Directories whose children are not known yet count as having none.
    out.nlink = 2;
    for (const auto& [name, c] : n.children)
      if (c->is_dir()) ++out.nlink;
    return nullptr;
  }
  return n.file.get();  // files live as long as the tree
}

int NodeTree::with_size(FileBehaviour* f, NodeAttr& out) { return f ? f->size(out.size) : 0; }

int NodeTree::lookup(std::uint64_t parent, const std::string& name, NodeAttr& out) {
  int err;
  Node* p = dir_ready(parent, err);
  if (!p) return err;
  FileBehaviour* f;
  {
    std::lock_guard lock(mu_);
    auto it = p->children.find(name);
    if (it == p->children.end()) return ENOENT;
    f = attr_of(*it->second, out);
  }
  return with_size(f, out);
}

int NodeTree::getattr(std::uint64_t ino, NodeAttr& out) {
  FileBehaviour* f;
  {
    std::lock_guard lock(mu_);
    Node* n = find(ino);
    if (!n) return ENOENT;
    f = attr_of(*n, out);
  }
  return with_size(f, out);
}

int NodeTree::opendir(std::uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* n = find(ino);
  if (!n) return ENOENT;
  return n->is_dir() ? 0 : ENOTDIR;
}

int NodeTree::readdir(std::uint64_t ino, std::vector<DirEntry>& out) {
  int err;
  Node* n = dir_ready(ino, err);
  if (!n) return err;
  std::lock_guard lock(mu_);
  out.clear();
  out.push_back({".", n->ino, n->mode});
  out.push_back({"..", n->parent->ino, n->parent->mode});
  for (const auto& [name, c] : n->children) out.push_back({name, c->ino, c->mode});
  return 0;
}

int NodeTree::open(std::uint64_t ino, int flags, std::unique_ptr<OpenFile>& out, bool* immutable) {
  FileBehaviour* f;
  {
    std::lock_guard lock(mu_);
    Node* n = find(ino);
    if (!n) return ENOENT;
    if (n->is_dir()) return EISDIR;
    f = n->file.get();  // files live as long as the tree
  }
  if (immutable) *immutable = f->immutable();
  // tracefs lets root open read-only files for writing; the write fails.
  return f->open(flags, out);
}

void NodeTree::set_owner(uid_t uid, gid_t gid) {
  std::lock_guard lock(mu_);
  uid_ = uid;
  gid_ = gid;
}


}  // namespace eventfs
