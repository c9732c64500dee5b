// Many threads writing and reading the control files at once leave a
// consistent state. Nothing here may touch the top-level instance.

#include <fnmatch.h>
#include <functional>
#include <random>
#include <string_view>


#include "support/control_fixture.h"

namespace eventfs_it {
namespace {

using namespace control;

struct Worker {
  // Enable and filter of an event this thread alone touches.
  std::string enable_rel, filter_rel, kernel_dir;  // kernel_dir under the instance's events/
  std::vector<std::string> filters;                // in the event's names; "0" clears
  // A trigger this thread alone adds and removes.
  std::string trigger_rel, trigger_kernel;  // files
  std::string add, remove;                  // what is written
  std::string kernel_line, mount_line;      // what the instance and the mount show while it is there
};

std::vector<Worker> make_workers() {
  std::vector<Worker> w;
  const std::vector<std::pair<std::string, std::string>> toggled = {
      {"sched_wakeup", "pid"},       {"sched_process_fork", "parent_pid"}, {"sched_process_exec", "pid"},
      {"sched_process_exit", "pid"}, {"irq_handler_entry", "irq"},         {"irq_handler_exit", "irq"},
      {"softirq_entry", "vec"},      {"softirq_exit", "vec"}};
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"sched_migrate_task", "sched:sched_migrate_task"}, {"sys_enter", "raw_syscalls:sys_enter"},
      {"sys_exit", "raw_syscalls:sys_exit"},              {"cpu_idle", "power:cpu_idle"},
      {"cpu_frequency", "power:cpu_frequency"},           {"block_rq_issue", "block:block_rq_issue"},
      {"block_rq_complete", "block:block_rq_complete"}};
  auto sources = live_sources();
  for (int t = 0; t < 10; ++t) {
    Worker x;
    std::string field;
    if (t < 8) {
      const auto& [ev, f] = toggled[t];
      x.enable_rel = ev + "/enable";
      x.filter_rel = ev + "/filter";
      x.kernel_dir = sources[ev];
      field = f;
    } else {
      std::string ev = t == 8 ? "sched_process_free" : "sched_process_wait";
      x.enable_rel = "raw/sched/" + ev + "/enable";
      x.filter_rel = "raw/sched/" + ev + "/filter";
      x.kernel_dir = "sched/" + ev;
      field = "pid";
    }
    x.filters = {field + " == " + std::to_string(100 + t), field + " != " + std::to_string(200 + t) + " && " + field +
                                                               " != 7",
                 "0"};
    std::string pid = std::to_string(-(t + 1));
    x.trigger_rel = "sched_switch/trigger";
    x.trigger_kernel = "sched/sched_switch/trigger";
    if (t < 7) {
      x.add = "enable_event:" + targets[t].first + " if prev_pid == " + pid;
      x.remove = "!enable_event:" + targets[t].first;
      x.kernel_line = "enable_event:" + targets[t].second + ":unlimited if prev_pid == " + pid;
      x.mount_line = "enable_event:" + targets[t].first + ":unlimited if prev_pid == " + pid;
    } else if (t == 7) {
      x.add = "traceoff:3 if prev_pid == " + pid;
      x.remove = "!traceoff";
      x.kernel_line = x.mount_line = "traceoff:count=3 if prev_pid == " + pid;
    } else if (t == 8) {
      x.add = "stacktrace if prev_pid == " + pid;
      x.remove = "!stacktrace";
      x.kernel_line = x.mount_line = "stacktrace:unlimited if prev_pid == " + pid;
    } else {
      // traceon and traceoff are one kind of trigger to the kernel: another event.
      x.trigger_rel = "cpu_frequency/trigger";
      x.trigger_kernel = sources["cpu_frequency"] + "/trigger";
      x.add = "traceon if cpu_id == 9999";
      x.remove = "!traceon";
      x.kernel_line = x.mount_line = "traceon:unlimited if cpu_id == 9999";
    }
    w.push_back(std::move(x));
  }
  return w;
}

class ControlConcurrency : public ControlTest {};

TEST_F(ControlConcurrency, TenThreadsWritingAndReadingLeaveAConsistentState) {
  auto sources = live_sources();
  for (const char* ev : {"sched_switch", "sched_wakeup", "cpu_frequency", "sys_enter", "block_rq_issue"})
    if (!sources.count(ev)) GTEST_SKIP() << ev << " is not available on this kernel";
  auto workers = make_workers();
  MountedEventfs m;
  ASSERT_TRUE(m.Start());
  const std::string inst = instance_dir(m.instance());
  const auto refused = ::eventfs::testing::refused_writes();

  // Every line a trigger file may show, and every filter text an event may show.
  std::map<std::string, std::set<std::string>> possible_triggers;  // mount file -> lines
  std::map<std::string, std::set<std::string>> possible_filters;   // mount file -> texts
  std::vector<std::string> readable = {"error_log", "sched_switch/enable", "sched_switch/filter"};
  for (const auto& w : workers) {
    possible_triggers[w.trigger_rel].insert(w.mount_line);
    possible_filters[w.filter_rel].insert("none\n");
    for (const auto& f : w.filters)
      if (f != "0") possible_filters[w.filter_rel].insert(f + "\n");
    readable.push_back(w.enable_rel);
    readable.push_back(w.filter_rel);
    readable.push_back(w.trigger_rel);
  }
  static const std::regex log_head(R"(^\[ *\d+\.\d{6}\] \S+: error: .+$)");
  static const std::regex log_caret(R"(^ {11,}\^$)");

  struct Result {
    long writes = 0, refusals = 0, reads = 0;
    std::vector<std::string> problems;
    int enabled = 0;            // last accepted enable
    std::string filter = "0";   // last accepted filter
    bool trigger = false;       // last accepted trigger action: added
  };
  std::vector<Result> results(workers.size());
  const auto deadline = Clock::now() + 3s;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < workers.size(); ++t) {
    threads.emplace_back([&, t] {
      const Worker& w = workers[t];
      Result& r = results[t];
      std::mt19937 rng(static_cast<unsigned>(t) * 2654435761u + 17);
      auto problem = [&](const std::string& p) {
        if (r.problems.size() < 5) r.problems.push_back("thread " + std::to_string(t) + ": " + p);
      };
      auto accepted = [&](const std::string& rel, const std::string& data) {
        ++r.writes;
        int e = write_once(m / rel, data + "\n");
        if (e != 0) problem("'" + data + "' to " + rel + ": " + (e < 0 ? "short write" : std::strerror(e)));
        return e == 0;
      };
      while (Clock::now() < deadline) {
        // Trigger and enable writes cost the kernel an RCU grace period or
        // so each (milliseconds): they are the rarer operations.
        unsigned op = rng() % 100;
        if (op < 10) {
          int on = static_cast<int>(rng() % 2);
          if (accepted(w.enable_rel, std::to_string(on))) r.enabled = on;
        } else if (op < 25) {
          const std::string& f = w.filters[rng() % w.filters.size()];
          if (accepted(w.filter_rel, f)) r.filter = f;
        } else if (op < 33) {
          bool add = !r.trigger;  // alternate: never a duplicate
          if (accepted(w.trigger_rel, add ? w.add : w.remove)) r.trigger = add;
        } else if (op < 45) {
          const RefusedWrite& bad = refused[rng() % refused.size()];
          if (bad.data.empty()) continue;
          ++r.refusals;
          int e = write_once(m / bad.file, bad.data);
          if (e != bad.err)
            problem(std::string("refused write '") + bad.what + "': " + (e ? std::strerror(e) : "accepted"));
        } else {
          const std::string& rel = readable[rng() % readable.size()];
          std::string text;
          ++r.reads;
          if (int e = read_file(m / rel, text)) {
            problem("read " + rel + ": " + std::strerror(e));
            continue;
          }
          if (rel == "error_log") {
            auto lines = split_lines(text);
            bool ok = lines.size() % 3 == 0;
            for (std::size_t i = 0; ok && i < lines.size(); i += 3)
              ok = std::regex_match(lines[i], log_head) && lines[i + 1].rfind("  Command: ", 0) == 0 &&
                   std::regex_match(lines[i + 2], log_caret);
            if (!ok) problem("error_log malformed: " + head_lines(text, 6));
          } else if (rel.size() > 7 && rel.substr(rel.size() - 7) == "/enable") {
            if (text != "0\n" && text != "1\n" && text != "0*\n" && text != "1*\n") problem(rel + ": [" + text + "]");
          } else if (rel.size() > 7 && rel.substr(rel.size() - 7) == "/filter") {
            auto it = possible_filters.find(rel);
            if (it != possible_filters.end() && !it->second.count(text)) problem(rel + ": [" + text + "]");
            if (rel == "sched_switch/filter" && text != "none\n") problem(rel + ": [" + text + "]");
          } else if (text.rfind("#", 0) != 0) {
            for (const auto& l : split_lines(text))
              if (!possible_triggers.at(rel).count(l)) problem(rel + ": unexpected line [" + l + "]");
          } else if (text.rfind(kHeaderStart, 0) != 0) {
            problem(rel + ": [" + text + "]");
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  long writes = 0, refusals = 0, reads = 0;
  std::vector<std::string> problems;
  for (const auto& r : results) {
    writes += r.writes;
    refusals += r.refusals;
    reads += r.reads;
    problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  }
  RecordProperty("writes", static_cast<int>(writes));
  RecordProperty("refusals", static_cast<int>(refusals));
  RecordProperty("reads", static_cast<int>(reads));
  EXPECT_TRUE(problems.empty()) << join(problems);
  EXPECT_GT(writes, 100) << "the threads hardly wrote anything";
  EXPECT_GT(refusals, 20);
  EXPECT_GT(reads, 100);

  // The daemon lived through it and still serves.
  ASSERT_TRUE(process_alive(m.pid())) << m.Stderr();
  ASSERT_TRUE(mounted_at(m.path()));
  EXPECT_EQ(slurp(m / "sched_switch/format"), kGoldenSchedSwitch);

  // Each thread's last word is what the instance holds.
  for (std::size_t t = 0; t < workers.size(); ++t) {
    const Worker& w = workers[t];
    const Result& r = results[t];
    const std::string kdir = inst + "/events/" + w.kernel_dir;
    EXPECT_EQ(slurp(kdir + "/enable"), std::to_string(r.enabled) + "\n") << "thread " << t << ": " << w.enable_rel;
    EXPECT_EQ(slurp(kdir + "/filter"), r.filter == "0" ? "none\n" : r.filter + "\n")
        << "thread " << t << ": " << w.filter_rel;
    EXPECT_EQ(slurp(m / w.filter_rel), r.filter == "0" ? "none\n" : r.filter + "\n") << "thread " << t;
    auto klines = as_set(trigger_lines(slurp(inst + "/events/" + w.trigger_kernel)));
    EXPECT_EQ(klines.count(w.kernel_line), r.trigger ? 1u : 0u) << "thread " << t << ": " << w.kernel_line;
    auto mlines = as_set(trigger_lines(slurp(m / w.trigger_rel)));
    EXPECT_EQ(mlines.count(w.mount_line), r.trigger ? 1u : 0u) << "thread " << t << ": " << w.mount_line;
  }
  // Every stable trigger file shows exactly the instance's triggers, translated.
  for (const auto& ev : split_lines(slurp(m / "available_events"))) {
    ASSERT_TRUE(sources.count(ev)) << ev;
    std::string kernel = slurp(inst + "/events/" + sources[ev] + "/trigger");
    EXPECT_EQ(slurp(m / (ev + "/trigger")), translate_kernel_triggers(kernel, sources)) << ev;
  }
  for (const char* ev : {"sched_process_free", "sched_process_wait"})
    EXPECT_EQ(slurp(m / (std::string("raw/sched/") + ev + "/trigger")),
              slurp(inst + "/events/sched/" + ev + "/trigger"));
  m.Stop();
  EXPECT_FALSE(exists(inst));
  EXPECT_EQ(m.Stderr(), "");
}

}  // namespace
}  // namespace eventfs_it
