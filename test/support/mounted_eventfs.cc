// Helpers for the integration tests: run the real eventfs daemon on a fresh
#include "support/mounted_eventfs.h"

namespace eventfs_it {

const std::set<std::string>& control_root_entries() {
  static const std::set<std::string> s = {"error_log", "trace_clock", "variables", "trace_pipe", "per_cpu"};
  return s;
}

const std::set<std::string>& control_event_entries() {
  static const std::set<std::string> s = {"enable", "filter", "trigger"};
  return s;
}

::testing::AssertionResult ListingMatches(const std::vector<std::string>& got,
                                          const std::set<std::string>& required,
                                          const std::set<std::string>& optional) {
  std::set<std::string> have(got.begin(), got.end());
  std::vector<std::string> missing, unexpected;
  for (const auto& r : required)
    if (!have.count(r)) missing.push_back(r);
  for (const auto& h : have)
    if (!required.count(h) && !optional.count(h)) unexpected.push_back(h);
  if (missing.empty() && unexpected.empty() && have.size() == got.size()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "listing {" << join(got, ", ") << "}: missing {" << join(missing, ", ")
                                       << "}, unexpected {" << join(unexpected, ", ") << "}";
}

std::string root_skip_reason() {
  if (::geteuid() != 0) return "needs root (FUSE mounts and tracefs)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
  if (::access(kBinary, X_OK) != 0) return std::string("daemon not built: ") + kBinary;
  return "";
}

std::string live_skip_reason() {
  std::string why = root_skip_reason();
  if (!why.empty()) return why;
  struct stat st;
  std::string ev = std::string(kLiveTracefs) + "/events/sched/sched_switch/format";
  if (::stat(ev.c_str(), &st) != 0) return "no live tracefs with sched:sched_switch at " + std::string(kLiveTracefs);
  return "";
}

}  // namespace eventfs_it
