// The in-memory tracefs instance of the unit tests (see fake_instance.h).
#include "support/fake_instance.h"

#include <cstring>

#include <sstream>

namespace eventfs::testing {

Result<std::string> FakeInstance::read(const std::string& rel) const {
  std::string out;
  if (int e = read_into(rel, out)) return fail(e, rel + ": " + std::strerror(e));
  return out;
}

Status FakeInstance::write(const std::string& rel, std::string_view data) const {
  if (int e = write_code(rel, data)) return fail(e, rel + ": " + std::strerror(e));
  return {};
}

Status FakeInstance::truncate(const std::string& rel) const {
  if (int e = truncate_code(rel)) return fail(e, rel + ": " + std::strerror(e));
  return {};
}

int FakeInstance::read_into(const std::string& rel, std::string& out) const {
  std::lock_guard lock(mu_);
  if (rel == "error_log") {
    out = kernel_log_;
    return 0;
  }
  auto [dir, file] = split(rel);
  if (file == "enable") {
    auto it = enabled_.find(dir);
    out = (it != enabled_.end() && it->second) ? "1\n" : "0\n";
    if (armed(dir)) out.insert(1, "*");
  } else if (file == "filter") {
    auto it = filters_.find(dir);
    out = it == filters_.end() ? "none\n" : it->second + "\n";
  } else if (file == "trigger") {
    auto it = triggers_.find(dir);
    if (it == triggers_.end() || it->second.empty()) {
      out = kHeader;
    } else {
      out.clear();
      for (auto l = it->second.rbegin(); l != it->second.rend(); ++l) out += *l + "\n";  // newest first
    }
  } else {
    return ENOENT;
  }
  return 0;
}

int FakeInstance::write_code(const std::string& rel, std::string_view data) const {
  if (before_write) before_write(rel);
  std::lock_guard lock(mu_);
  ++writes;
  if (fail_next) {
    int e = fail_next;
    fail_next = 0;
    return e;
  }
  if (fail_after > 0) {
    --fail_after;
  } else if (fail_after == 0) {
    fail_after = -1;
    fire_locked(fire_before_failing);
    return fail_errno;
  }
  auto [dir, file] = split(rel);
  std::string d(data);
  if (file == "enable") {
    enabled_[dir] = d == "1";
    return 0;
  }
  if (file == "filter") {
    if (d.find("bogus") != std::string::npos) {
      kernel_log_ = "[  1.000000] event filter parse error: error: Field not found\n  Command: " + d +
                    "\n" + std::string(11 + d.find("bogus"), ' ') + "^\n";
      filters_[dir] = d + "\n^\nparse_error: Field not found";  // the kernel keeps what it refused
      return EINVAL;
    }
    if (d == "0")
      filters_.erase(dir);
    else
      filters_[dir] = d;
    return 0;
  }
  if (file == "trigger") return write_trigger(dir, d);
  return ENOENT;
}

int FakeInstance::truncate_code(const std::string& rel) const {
  std::lock_guard lock(mu_);
  if (rel == "error_log") kernel_log_.clear();
  return 0;
}

std::vector<std::string> FakeInstance::triggers(const std::string& dir) const {
  std::lock_guard lock(mu_);
  auto it = triggers_.find(dir);
  return it == triggers_.end() ? std::vector<std::string>{} : it->second;
}

std::string FakeInstance::filter(const std::string& dir) const {
  std::lock_guard lock(mu_);
  auto it = filters_.find(dir);
  return it == filters_.end() ? "" : it->second;
}

bool FakeInstance::enabled(const std::string& dir) const {
  std::lock_guard lock(mu_);
  auto it = enabled_.find(dir);
  return it != enabled_.end() && it->second;
}

void FakeInstance::fire(const std::string& dir) const {
  std::lock_guard lock(mu_);
  fire_locked(dir);
}

std::pair<std::string, std::string> FakeInstance::split(const std::string& rel) {
  auto slash = rel.rfind('/');
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

void FakeInstance::fire_locked(const std::string& dir) const {
  auto it = triggers_.find(dir);
  if (it == triggers_.end()) return;
  for (const auto& l : it->second) {
    bool on = l.rfind("enable_event:", 0) == 0;
    if (!on && l.rfind("disable_event:", 0) != 0) continue;
    std::string rest = l.substr(l.find(':') + 1);
    std::string sys = rest.substr(0, rest.find(':'));
    rest = rest.substr(rest.find(':') + 1);
    enabled_["events/" + sys + "/" + rest.substr(0, rest.find(':'))] = on;
  }
}

bool FakeInstance::armed(const std::string& dir) const {
  // An enable_event/disable_event trigger elsewhere holds this event in soft mode.
  std::string sys_ev = dir.substr(7);
  sys_ev[sys_ev.find('/')] = ':';
  for (const auto& [d, lines] : triggers_)
    for (const auto& l : lines)
      if (l.find("able_event:" + sys_ev + ":") != std::string::npos) return true;
  return false;
}

int FakeInstance::write_trigger(const std::string& dir, const std::string& d) const {
  bool remove = !d.empty() && d[0] == '!';
  std::string s = remove ? d.substr(1) : d;
  std::string filter;
  if (auto at = s.find(" if "); at != std::string::npos) {
    filter = s.substr(at);
    s = s.substr(0, at);
  }
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, ':')) parts.push_back(p);
  std::size_t ident_parts = (parts[0] == "enable_event" || parts[0] == "disable_event") ? 3 : 1;
  if (parts.size() < ident_parts) return EINVAL;
  std::string ident;
  for (std::size_t i = 0; i < ident_parts; ++i) ident += (i ? ":" : "") + parts[i];
  std::string count = parts.size() > ident_parts ? "count=" + parts[ident_parts] : "unlimited";
  auto& lines = triggers_[dir];
  for (auto it = lines.begin(); it != lines.end(); ++it) {
    if (it->rfind(ident + ":", 0) == 0) {
      if (!remove) return EEXIST;
      lines.erase(it);
      return 0;
    }
  }
  if (remove) return 0;
  lines.push_back(ident + ":" + count + filter);
  return 0;
}

}  // namespace eventfs::testing
