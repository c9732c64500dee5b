#include "fs/node_tree.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <ctime>

namespace eventfs {

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
