#include "control/enable_users.h"

#include <fmt/format.h>

namespace eventfs {

std::string EnableUsers::hold_of(const std::string& user) {
  std::lock_guard lock(mu_);
  return fmt::format("{}#{}", user, ++next_hold_);
}

EnableUsers::Change EnableUsers::set(const std::string& dir, const std::string& user, bool on) {
  std::lock_guard lock(mu_);
  auto& users = users_[dir];
  Change c;
  c.before = !users.empty();
  c.had = users.count(user) > 0;
  if (on)
    users.insert(user);
  else
    users.erase(user);
  c.after = !users.empty();
  return c;
}

void EnableUsers::undo(const std::string& dir, const std::string& user, const Change& change) {
  std::lock_guard lock(mu_);
  auto& users = users_[dir];
  if (change.had)
    users.insert(user);
  else
    users.erase(user);
}

EnableUsers::Who EnableUsers::who(const std::string& dir, const std::string& name) const {
  std::lock_guard lock(mu_);
  Who w;
  auto it = users_.find(dir);
  if (it == users_.end() || it->second.empty()) return w;
  w.anyone = true;
  // Its own enable, then its holds ("stable:<name>#<n>"), sort together.
  const std::string own = stable_user(name);
  auto u = it->second.lower_bound(own);
  w.mine = u != it->second.end() && (*u == own || u->rfind(own + "#", 0) == 0);
  return w;
}

}  // namespace eventfs
