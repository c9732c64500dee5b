// The fixture of the fault tests (the top-level instance byte for byte as before),
#include "support/fault_fixture.h"

namespace eventfs_it::fault {

std::int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

long ms_of(std::int64_t ns) { return static_cast<long>(ns / 1000000); }

std::string errno_desc(int e) {
  if (e == 0) return "accepted";
  if (e < 0) return "short write";
  const char* name = ::strerrorname_np(e);
  return std::string(name ? name : "?") + " (" + std::strerror(e) + ")";
}

std::vector<std::string> trigger_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : split_lines(text))
    if (!l.empty() && l[0] != '#') out.push_back(l);
  return out;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::string owner_record(const std::string& name) { return "/run/eventfs/" + name + ".owner"; }

unsigned fault_seed() {
  static const unsigned seed = [] {
    if (const char* s = std::getenv("EVENTFS_FAULT_SEED"); s && *s)
      return static_cast<unsigned>(std::strtoul(s, nullptr, 10));
    return static_cast<unsigned>(std::random_device{}());
  }();
  return seed;
}

std::map<std::string, std::string> top_level_state() {
  const std::string root = kLiveTracefs;
  std::map<std::string, std::string> s;
  auto take = [&](const std::string& rel) {
    std::string text;
    int e = read_file(root + "/" + rel, text);
    if (e == 0)
      s[rel] = text;
    else if (e != ENOENT)
      s[rel] = std::string("<") + std::strerror(e) + ">";
  };
  for (const char* f : {"tracing_on", "current_tracer", "set_event", "events/enable"}) take(f);
  for (const auto& sys : list_dir(root + "/events", true)) {
    const std::string sd = "events/" + sys;
    take(sd + "/enable");
    take(sd + "/filter");
    for (const auto& ev : list_dir(root + "/" + sd, true))
      for (const char* f : {"enable", "filter", "trigger"}) take(sd + "/" + ev + "/" + f);
  }
  return s;
}

std::string state_diff(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& after) {
  std::set<std::string> keys;
  for (const auto& [k, v] : before) keys.insert(k);
  for (const auto& [k, v] : after) keys.insert(k);
  std::string out;
  int n = 0;
  for (const auto& k : keys) {
    auto b = before.find(k), a = after.find(k);
    std::string bv = b == before.end() ? "<absent>" : b->second, av = a == after.end() ? "<absent>" : a->second;
    if (bv == av) continue;
    if (n++ < 20) out += "  " + k + ": [" + printable(bv) + "] -> [" + printable(av) + "]\n";
  }
  if (n > 20) out += "  ... " + std::to_string(n - 20) + " more\n";
  return out;
}

void FaultTest::SetUp() {
  EVENTFS_REQUIRE_LIVE_TRACEFS();
  seed_ = fault_seed();
  std::cout << "[fault] seed " << seed_ << " (EVENTFS_FAULT_SEED=" << seed_ << " repeats this run)" << std::endl;
  RecordProperty("seed", std::to_string(seed_));
  top_ = top_level_state();
}

void FaultTest::TearDown() {
  if (top_.empty()) return;  // skipped
  auto now = top_level_state();
  EXPECT_TRUE(now == top_) << "the top-level instance changed:\n" << state_diff(top_, now);
}

}  // namespace eventfs_it::fault
