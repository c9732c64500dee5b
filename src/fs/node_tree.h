// The inode tree of the mount, independent of FUSE: directories and the files
// in them (each a FileBehaviour, fs/file_contract.h). Every operation returns
// 0 or an errno.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fs/file_contract.h"

namespace eventfs {

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
