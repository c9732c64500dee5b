// The FUSE-free inode tree: lookup, attributes, listings, lazy directories,
// reads at offsets, and tracefs's answers to writes.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

#include "fs/node_tree.h"
#include "fs/simple_files.h"

namespace eventfs {
namespace {

TEST(NodeTree, LookupGetattrAndReaddir) {
  NodeTree t;
  Node& dir = t.add_dir(t.root(), "sched_switch");
  t.add_file(dir, "format", NodeTree::kReadOnlyMode, std::make_shared<ConstantFile>("abc\n"));
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "sched_switch", a), 0);
  EXPECT_TRUE(S_ISDIR(a.mode));
  EXPECT_EQ(a.mode & 07777, 0755u);
  std::uint64_t dir_ino = a.ino;
  ASSERT_EQ(t.lookup(dir_ino, "format", a), 0);
  EXPECT_EQ(a.mode, S_IFREG | 0440);
  EXPECT_EQ(a.size, 4u);
  EXPECT_EQ(t.lookup(dir_ino, "nope", a), ENOENT);
  EXPECT_EQ(t.lookup(a.ino, "x", a), ENOTDIR);
  EXPECT_EQ(t.getattr(12345, a), ENOENT);
  std::vector<DirEntry> entries;
  ASSERT_EQ(t.readdir(NodeTree::kRootIno, entries), 0);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, ".");
  EXPECT_EQ(entries[1].name, "..");
  EXPECT_EQ(entries[2].name, "sched_switch");
}

TEST(NodeTree, ReadsAtOffsetsAndRefusesWritesLikeTracefs) {
  NodeTree t;
  auto f = std::make_shared<ConstantFile>("hello world\n");
  t.add_file(t.root(), "README", NodeTree::kReadOnlyMode, f);
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "README", a), 0);
  std::unique_ptr<OpenFile> open;
  ASSERT_EQ(t.open(a.ino, O_WRONLY, open), 0);  // root may open it; the write fails
  std::string out;
  ASSERT_EQ(open->read(6, 100, out), 0);
  EXPECT_EQ(out, "world\n");
  ASSERT_EQ(open->read(100, 10, out), 0);
  EXPECT_EQ(out, "");
  std::size_t written = 0;
  EXPECT_EQ(open->write("x", 0, written), EINVAL);
  EXPECT_EQ(t.open(NodeTree::kRootIno, O_RDONLY, open), EISDIR);
}

TEST(NodeTree, ControlFilesRegenerateAtOffsetZeroAndPassEachWrite) {
  NodeTree t;
  int generation = 0, truncated = 0;
  std::vector<std::string> writes;
  t.add_file(t.root(), "enable", NodeTree::kReadWriteMode,
             std::make_shared<ControlFile>(
                 [&](std::string& out) {
                   out = "state " + std::to_string(++generation) + "\n";
                   return 0;
                 },
                 [&](std::string_view d) {
                   if (d == "bad") return EINVAL;
                   writes.emplace_back(d);
                   return 0;
                 },
                 [&] { ++truncated; }));
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "enable", a), 0);
  EXPECT_EQ(a.size, 0u);  // generated files report 0, as on tracefs
  std::unique_ptr<OpenFile> f;
  bool immutable = true;
  ASSERT_EQ(t.open(a.ino, O_RDWR, f, &immutable), 0);
  EXPECT_FALSE(immutable) << "control files are generated afresh, never cached";
  std::string out;
  ASSERT_EQ(f->read(0, 3, out), 0);
  EXPECT_EQ(out, "sta");
  ASSERT_EQ(f->read(3, 100, out), 0);
  EXPECT_EQ(out, "te 1\n");  // the rest of the same snapshot
  ASSERT_EQ(f->read(0, 100, out), 0);
  EXPECT_EQ(out, "state 2\n");  // a new read from 0 regenerates
  std::size_t written = 0;
  ASSERT_EQ(f->write("1\n", 0, written), 0);
  EXPECT_EQ(written, 2u);
  EXPECT_EQ(f->write("bad", 0, written), EINVAL);
  EXPECT_EQ(writes, std::vector<std::string>{"1\n"});
  EXPECT_EQ(truncated, 0);
  ASSERT_EQ(t.open(a.ino, O_WRONLY | O_TRUNC, f), 0);
  EXPECT_EQ(truncated, 1);
}

// pread(2) on one descriptor from many threads: one open file read at
// offsets 0 (which regenerates its text) and 5 at once. Each generation's
// text is new (its number, then one letter that depends on it, in a length
// that alternates so that the text is reallocated) and is moved in, as the
// controller's readers do, freeing the last one. A read must give a piece of
// one generation's text: never freed memory or two texts torn together.
TEST(NodeTree, ControlFileReadFromManyThreadsAtOnceGivesWholeTexts) {
  std::atomic<unsigned> generation{0};
  auto text_of = [](unsigned g) {
    return "G" + std::to_string(g) + ":" + std::string(40 + (g % 2) * 60, static_cast<char>('a' + g % 26)) + "\n";
  };
  NodeTree t;
  t.add_file(t.root(), "filter", NodeTree::kReadWriteMode,
             std::make_shared<ControlFile>(
                 [&](std::string& out) {
                   out = text_of(generation++);
                   return 0;
                 },
                 [](std::string_view) { return 0; }));
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "filter", a), 0);
  std::unique_ptr<OpenFile> f;
  ASSERT_EQ(t.open(a.ino, O_RDONLY, f), 0);
  // From offset 0: the whole text of the generation it names. From 5: the
  // tail of some generation's text, the same letter to its newline.
  auto whole_piece = [&](std::uint64_t off, const std::string& out) {
    if (off == 0) {
      unsigned g = 0;
      return std::sscanf(out.c_str(), "G%u:", &g) == 1 && out == text_of(g).substr(0, 256);
    }
    auto colon = out.find(':');
    std::string tail = colon == std::string::npos ? out : out.substr(colon + 1);
    return tail.size() >= 30 && tail.back() == '\n' &&
           tail.find_first_not_of(tail[0]) == tail.size() - 1;
  };
  std::atomic<int> bad{0}, ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      std::string out;
      for (++ready; ready < 8;) std::this_thread::yield();
      for (int k = 0; k < 50000; ++k) {
        std::uint64_t off = (i + k) % 2 ? 5 : 0;
        if (f->read(off, 256, out) != 0 || !whole_piece(off, out)) {
          if (++bad == 1) ADD_FAILURE() << "read at " << off << ": '" << out << "'";
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(generation.load(), 1000u);
}

TEST(NodeTree, LazyDirectoriesAreFilledOnceOnFirstUse) {
  NodeTree t;
  int calls = 0;
  t.add_dir(t.root(), "raw", [&](Node& self) {
    ++calls;
    t.add_file(self, "x", NodeTree::kReadOnlyMode, std::make_shared<ConstantFile>("1"));
  });
  EXPECT_EQ(calls, 0);
  NodeAttr raw, x;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "raw", raw), 0);
  EXPECT_EQ(calls, 0);
  ASSERT_EQ(t.lookup(raw.ino, "x", x), 0);
  std::vector<DirEntry> entries;
  ASSERT_EQ(t.readdir(raw.ino, entries), 0);
  EXPECT_EQ(entries.size(), 3u);
  EXPECT_EQ(calls, 1);
}

// A directory being filled (raw/<system>/ reads the kernel's event list)
// and a file whose size is being generated (a raw format's parse) hold up
// no lookup elsewhere in the tree; a lookup in the directory being filled
// waits for it and then finds its children.
TEST(NodeTree, SlowPopulatesAndSizesHoldUpNothingElse) {
  NodeTree t;
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<int> waiting{0};
  auto slow_size = std::make_shared<ConstantFile>([&](std::string& out) {
    ++waiting;
    std::lock_guard wait(gate);
    out = "text\n";
    return 0;
  });
  t.add_file(t.root(), "slow_format", NodeTree::kReadOnlyMode, slow_size);
  t.add_dir(t.root(), "slow_dir", [&](Node& self) {
    ++waiting;
    std::lock_guard wait(gate);
    t.add_file(self, "child", NodeTree::kReadOnlyMode, std::make_shared<ConstantFile>("c\n"));
  });
  t.add_file(t.root(), "other", NodeTree::kReadOnlyMode, std::make_shared<ConstantFile>("o\n"));
  NodeAttr a;
  ASSERT_EQ(t.lookup(NodeTree::kRootIno, "slow_dir", a), 0);
  const std::uint64_t slow_dir = a.ino;
  auto sized = std::async(std::launch::async, [&] {
    NodeAttr b;
    return t.lookup(NodeTree::kRootIno, "slow_format", b);
  });
  auto filled = std::async(std::launch::async, [&] {
    NodeAttr b;
    int e = t.lookup(slow_dir, "child", b);
    return e;
  });
  for (int i = 0; i < 2000 && waiting < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(waiting.load(), 2);
  auto other = std::async(std::launch::async, [&] {
    NodeAttr b;
    std::vector<DirEntry> entries;
    return t.lookup(NodeTree::kRootIno, "other", b) | t.getattr(NodeTree::kRootIno, b) |
           t.readdir(NodeTree::kRootIno, entries);
  });
  const bool done = other.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  closed.unlock();
  EXPECT_TRUE(done) << "a lookup elsewhere waited for a populate or a size";
  EXPECT_EQ(other.get(), 0);
  EXPECT_EQ(sized.get(), 0);
  EXPECT_EQ(filled.get(), 0);
}

TEST(NodeTree, GeneratedFilesReportTheirErrors) {
  NodeTree t;
  t.add_file(t.root(), "bad", NodeTree::kReadOnlyMode,
             std::make_shared<ConstantFile>([](std::string&) { return EIO; }));
  NodeAttr a;
  EXPECT_EQ(t.lookup(NodeTree::kRootIno, "bad", a), EIO);
}

}  // namespace
}  // namespace eventfs
