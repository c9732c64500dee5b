// The daemon's command line: eventfs's options checked into values, one
// line for each bad one, libfuse's own left for libfuse.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "options.h"
#include "stream/stream_hub.h"
#include "support/temp_dirs.h"

namespace eventfs {
namespace {

struct Parsed {
  Result<DaemonOptions, OptionsError> options;
  std::vector<std::string> left;  // what stays in the args for libfuse
};

Parsed parse(std::initializer_list<std::string> words) {
  std::vector<std::string> all{"eventfs"};
  all.insert(all.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (auto& w : all) argv.push_back(w.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  Parsed p{parse_daemon_options(args), {}};
  for (int i = 0; i < args.argc; ++i) p.left.emplace_back(args.argv[i]);
  fuse_opt_free_args(&args);
  return p;
}

std::string error_of(std::initializer_list<std::string> words) {
  auto p = parse(words);
  return p.options ? std::string("(accepted)") : p.options.error().message;
}

TEST(DaemonOptions, EveryOptionIntoItsValue) {
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto p = parse({"src", dir.path(), "-o",
                  "tracefs=/t,catalog=/c,instance=mine,reader=mmap,nice=3,rt=7,queue_kb=512,gid=0,max_read=65536",
                  "-f", "-s"});
  ASSERT_TRUE(p.options) << p.options.error().message;
  const DaemonOptions& o = *p.options;
  char* real = realpath(dir.path().c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(o.mountpoint, real);
  std::free(real);
  EXPECT_EQ(o.source, "src");
  EXPECT_EQ(o.tracefs, "/t");
  EXPECT_EQ(o.catalog, "/c");
  EXPECT_EQ(o.instance, "mine");
  EXPECT_EQ(o.reader_mode, ReaderMode::Mmap);
  EXPECT_EQ(o.drainer_nice, 3);
  EXPECT_EQ(o.drainer_fifo, 7);
  EXPECT_EQ(o.queue_bytes, 512u * 1024);
  EXPECT_EQ(o.group, 0u);
  EXPECT_EQ(o.max_read, 65536u);
  EXPECT_TRUE(o.foreground);
  EXPECT_TRUE(o.single_thread);
  // max_read is libfuse's too; eventfs's own options are not.
  std::string left;
  for (const auto& w : p.left) left += w + " ";
  EXPECT_NE(left.find("max_read=65536"), std::string::npos) << left;
  EXPECT_EQ(left.find("instance="), std::string::npos) << left;
}

TEST(DaemonOptions, TheDefaults) {
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto p = parse({dir.path(), "-o", "allow_other"});
  ASSERT_TRUE(p.options) << p.options.error().message;
  const DaemonOptions& o = *p.options;
  EXPECT_EQ(o.source, "eventfs");
  EXPECT_FALSE(o.tracefs || o.catalog || o.instance || o.drainer_fifo);
  EXPECT_EQ(o.reader_mode, ReaderMode::Auto);
  EXPECT_EQ(o.queue_bytes, StreamHub::kQueueBytes);
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  EXPECT_EQ(o.drainer_nice, std::max(own - 10, -20));
  EXPECT_FALSE(o.foreground);
  std::string left;
  for (const auto& w : p.left) left += w + " ";
  EXPECT_NE(left.find("allow_other"), std::string::npos) << left;
}

TEST(DaemonOptions, HelpAndVersionCheckNothingElse) {
  auto h = parse({"-h", "-o", "nice=99"});
  ASSERT_TRUE(h.options);
  EXPECT_TRUE(h.options->help);
  auto v = parse({"--version"});
  ASSERT_TRUE(v.options);
  EXPECT_TRUE(v.options->version);
}

TEST(DaemonOptions, BadOnesAreOneLineSayingWhat) {
  eventfs_it::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string d = dir.path();
  auto none = parse({});
  ASSERT_FALSE(none.options);
  EXPECT_EQ(none.options.error().message, "no mount point given");
  EXPECT_TRUE(none.options.error().show_usage);
  EXPECT_EQ(error_of({"a", "b", "c"}), "too many arguments: 'c'");
  EXPECT_EQ(error_of({d, "-o", "nice=20"}), "nice=20: expected a number from -20 to 19");
  EXPECT_EQ(error_of({d, "-o", "nice=1x"}), "nice=1x: expected a number from -20 to 19");
  EXPECT_EQ(error_of({d, "-o", "rt=0"}), "rt=0: expected a priority from 1 to 99");
  EXPECT_EQ(error_of({d, "-o", "queue_kb=255"}), "queue_kb=255: expected a size in KiB from 256 to 1048576");
  EXPECT_EQ(error_of({d, "-o", "max_read=4095"}), "max_read=4095: expected a size in bytes from 4096 to 1073741824");
  EXPECT_EQ(error_of({d, "-o", "reader=fast"}), "reader=fast: expected auto, mmap or read");
  EXPECT_EQ(error_of({d, "-o", "instance="}), "instance= needs a name");
  EXPECT_EQ(error_of({d, "-o", "gid=no-such-group-here"}), "gid=no-such-group-here: no such group");
  EXPECT_EQ(error_of({d + "/absent"}), "mount point " + d + "/absent: No such file or directory");
  {
    std::FILE* f = std::fopen((d + "/file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  EXPECT_EQ(error_of({d + "/file"}), "mount point " + d + "/file: Not a directory");
  EXPECT_EQ(error_of({"/sys/kernel/events"}).rfind("/sys/kernel/events does not exist", 0), 0u);
  // A bad option and a missing mount point: the option is said (as before
  // any mount point is looked at).
  EXPECT_EQ(error_of({d + "/absent", "-o", "nice=99"}), "nice=99: expected a number from -20 to 19");
}

}  // namespace
}  // namespace eventfs
