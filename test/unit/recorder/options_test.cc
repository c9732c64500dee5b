// eventfs-record's command line: what it takes, and one line for bad usage.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "recorder/options.h"

namespace eventfs::recorder {
namespace {

Result<Options, UsageError> parse(std::initializer_list<const char*> args) {
  std::vector<std::string> words{"eventfs-record"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return parse_options(static_cast<int>(words.size()), argv.data());
}

std::string usage_error(std::initializer_list<const char*> args) {
  auto o = parse(args);
  return o ? std::string("(accepted)") : o.error().message;
}

TEST(RecordOptions, EventsMountDirSecondsAndACommand) {
  auto o = parse({"-m", "/mnt/ev", "-e", "sched_*", "-esys_enter", "-o", "out", "-t", "2.5"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->mount, "/mnt/ev");
  EXPECT_EQ(o->events, (std::vector<std::string>{"sched_*", "sys_enter"}));
  EXPECT_EQ(o->out_dir, "out");
  ASSERT_TRUE(o->seconds.has_value());
  EXPECT_DOUBLE_EQ(*o->seconds, 2.5);
  EXPECT_TRUE(o->command.empty());
  EXPECT_FALSE(o->nice.has_value());

  auto c = parse({"-e", "marker", "--", "sh", "-c", "exit 3", "-t"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->command, (std::vector<std::string>{"sh", "-c", "exit 3", "-t"}));
  EXPECT_FALSE(c->seconds.has_value());
  EXPECT_TRUE(c->mount.empty());
}

TEST(RecordOptions, TheReadersNiceValue) {
  auto o = parse({"-e", "x", "-n", "-5"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->nice, -5);
  auto p = parse({"-e", "x", "-n19"});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->nice, 19);
  EXPECT_EQ(usage_error({"-e", "x", "-n", "20"}), "-n needs a nice value from -20 to 19, not '20'");
  EXPECT_EQ(usage_error({"-e", "x", "-n", "-21"}), "-n needs a nice value from -20 to 19, not '-21'");
  EXPECT_EQ(usage_error({"-e", "x", "-n", "1.5"}), "-n needs a nice value from -20 to 19, not '1.5'");
  EXPECT_EQ(usage_error({"-e", "x", "-n", ""}), "-n needs a nice value from -20 to 19, not ''");
  EXPECT_EQ(usage_error({"-e", "x", "-n"}), "option -n needs a value");
}

TEST(RecordOptions, TheOutputFormat) {
  auto o = parse({"-e", "x"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->format, OutputFormat::kCtf);
  for (auto args : {std::initializer_list<const char*>{"-e", "x", "-F", "trace.dat"}, {"-e", "x", "-Ftrace.dat"},
                    {"-e", "x", "--format=trace.dat"}, {"--format", "trace.dat", "-e", "x"}}) {
    auto d = parse(args);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->format, OutputFormat::kTraceDat);
  }
  auto c = parse({"-e", "x", "-F", "trace.dat", "--format=ctf"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->format, OutputFormat::kCtf);
  EXPECT_EQ(usage_error({"-e", "x", "-F", "dat"}), "-F needs ctf or trace.dat, not 'dat'");
  EXPECT_EQ(usage_error({"-e", "x", "--format"}), "option --format needs a value");
  EXPECT_EQ(usage_error({"-e", "x", "--formats=ctf"}), "unknown option '--formats=ctf'");
}

TEST(RecordOptions, HelpAndVersionNeedNothingElse) {
  auto h = parse({"--help"});
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->help);
  auto v = parse({"-V"});
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->version);
}

TEST(RecordOptions, BadUsageIsOneLineSayingWhat) {
  EXPECT_EQ(usage_error({}), "no event given (-e EVENT)");
  EXPECT_EQ(usage_error({"-e"}), "option -e needs a value");
  EXPECT_EQ(usage_error({"-e", "x", "-t", "0"}), "-t needs a positive number of seconds, not '0'");
  EXPECT_EQ(usage_error({"-e", "x", "-t", "1s"}), "-t needs a positive number of seconds, not '1s'");
  EXPECT_EQ(usage_error({"-e", "x", "-t", "inf"}), "-t needs a positive number of seconds, not 'inf'");
  EXPECT_EQ(usage_error({"-e", "x", "-t", "1", "--", "true"}), "-t and a command exclude each other");
  EXPECT_EQ(usage_error({"-e", "x", "-m", ""}), "-m needs a directory");
  EXPECT_EQ(usage_error({"-e", ""}), "-e needs an event name");
  EXPECT_EQ(usage_error({"-e", "x", "-q"}), "unknown option '-q'");
  EXPECT_EQ(usage_error({"-e", "x", "stray"}), "unexpected argument 'stray' (a command goes after --)");
}

}  // namespace
}  // namespace eventfs::recorder
