// The fixture of the control tests (the top-level instance is left as it was) and
#include "support/control_fixture.h"
#include "support/time_scale.h"

namespace eventfs_it::control {

std::string owner_record(const std::string& name) { return "/run/eventfs/" + name + ".owner"; }

std::string wait_owner(const std::string& name, pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + scaled(limit);
  std::string text;
  for (;;) {
    if (read_file(owner_record(name), text) == 0 && std::strtol(text.c_str(), nullptr, 10) == pid) return text;
    if (Clock::now() >= deadline) return text;
    std::this_thread::sleep_for(2ms);
  }
}

::testing::AssertionResult Accepts(const MountedEventfs& m, const std::string& rel, std::string_view data) {
  int e = write_once(m / rel, data);
  if (e == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "write of '" << printable(data) << "' to " << rel << " failed: "
                                       << (e < 0 ? "short write" : std::strerror(e))
                                       << "; error_log: " << slurp(m / "error_log");
}

std::vector<std::string> trigger_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : split_lines(text))
    if (!l.empty() && l[0] != '#') out.push_back(l);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::vector<std::string> events_matching(const std::string& system, const std::string& glob) {
  std::vector<std::string> out;
  for (const auto& ev : list_dir(std::string(kLiveTracefs) + "/events/" + system, true))
    if (::fnmatch(glob.c_str(), ev.c_str(), 0) == 0) out.push_back(ev);
  return out;
}

std::string write_task_switch_catalog(const TempDir& dir) {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string path = dir / "with-task-switch.catalog";
  EXPECT_TRUE(write_text_file(path, text + kTaskSwitchCatalog));
  return path;
}

std::map<std::string, std::string> live_sources() {
  std::map<std::string, std::string> out;
  for (const auto& e : default_catalog())
    for (const auto& src : e.sources)
      if (exists(std::string(kLiveTracefs) + "/events/" + src + "/format")) {
        out[e.name] = src;
        break;
      }
  return out;
}

std::string translate_kernel_triggers(const std::string& text, const std::map<std::string, std::string>& sources) {
  if (text.rfind("#", 0) == 0) return text;
  std::map<std::string, std::string> stable_of;  // "sys:raw" -> stable
  for (const auto& [stable, src] : sources) {
    std::string k = src.substr(0, src.find('/')) + ":" + src.substr(src.find('/') + 1);
    stable_of.emplace(k, stable);
  }
  std::string out;
  for (const auto& line : trigger_lines(text)) {
    std::string l = line;
    for (const char* cmd : {"enable_event:", "disable_event:"}) {
      if (l.rfind(cmd, 0) != 0) continue;
      std::size_t a = std::strlen(cmd);
      std::size_t c1 = l.find(':', a);
      std::size_t c2 = c1 == std::string::npos ? c1 : l.find(':', c1 + 1);
      if (c2 == std::string::npos) break;
      auto it = stable_of.find(l.substr(a, c2 - a));
      if (it != stable_of.end()) l = cmd + it->second + l.substr(c2);
    }
    out += l + "\n";
  }
  return out;
}

void ping_pong(int rounds) {
  int a[2], b[2];
  if (::pipe(a) != 0) return;
  if (::pipe(b) != 0) {
    ::close(a[0]);
    ::close(a[1]);
    return;
  }
  std::thread peer([&] {
    char c;
    for (int i = 0; i < rounds; ++i) {
      if (::read(a[0], &c, 1) != 1) break;
      if (::write(b[1], &c, 1) != 1) break;
    }
  });
  char c = 'x';
  for (int i = 0; i < rounds; ++i) {
    if (::write(a[1], &c, 1) != 1) break;
    if (::read(b[0], &c, 1) != 1) break;
  }
  peer.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
}

bool switch_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + scaled(limit);
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    ping_pong(200);
    std::this_thread::sleep_for(10ms);
  }
}

void ControlTest::SetUp() {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  top_ = TopLevel();
}

void ControlTest::TearDown() {
  if (top_.empty()) return;  // skipped
  EXPECT_EQ(TopLevel(), top_) << "the top-level instance was changed";
}

std::map<std::string, std::string> ControlTest::TopLevel() {
  std::map<std::string, std::string> s;
  for (const char* f : {"trigger", "filter", "enable"}) s[f] = slurp(std::string(kTopSchedSwitch) + "/" + f);
  for (const char* f : {"events/sched/sched_migrate_task/enable", "events/sched/sched_wakeup/enable",
                        "events/irq/softirq_entry/enable", "events/block/block_rq_issue/enable"})
    s[f] = slurp(std::string(kLiveTracefs) + "/" + f);
  return s;
}

}  // namespace eventfs_it::control
