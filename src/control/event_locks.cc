#include "control/event_locks.h"

#include <algorithm>

namespace eventfs {

EventLockTable::Held EventLockTable::for_write(std::vector<std::string> dirs) {
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  Held h(*this);
  if (dirs.size() > kMaxEventLocks) {
    wide_mu_.lock();
    h.wide_ = true;
    return h;
  }
  wide_mu_.lock_shared();
  h.shared_ = true;
  {
    std::lock_guard lock(map_mu_);
    for (const auto& d : dirs) h.events_.push_back(use(d));
  }
  for (auto it : h.events_) it->second.mu.lock();
  return h;
}

EventLockTable::Held EventLockTable::for_read(const std::string& dir) {
  Held h(*this);
  {
    std::lock_guard lock(map_mu_);
    h.events_.push_back(use(dir));
  }
  h.events_.back()->second.mu.lock();
  return h;
}

std::size_t EventLockTable::in_use() const {
  std::lock_guard lock(map_mu_);
  return mutexes_.size();
}

EventLockTable::Mutexes::iterator EventLockTable::use(const std::string& dir) {
  auto it = mutexes_.try_emplace(dir).first;
  ++it->second.users;
  return it;
}

void EventLockTable::unuse(Mutexes::iterator it) {
  if (--it->second.users == 0) mutexes_.erase(it);
}

EventLockTable::Held::Held(Held&& o) noexcept
    : t_(o.t_), wide_(o.wide_), shared_(o.shared_), events_(std::move(o.events_)) {
  o.events_.clear();
  o.wide_ = false;
  o.shared_ = false;
}

EventLockTable::Held::~Held() {
  for (auto it = events_.rbegin(); it != events_.rend(); ++it) (*it)->second.mu.unlock();
  if (!events_.empty()) {
    std::lock_guard lock(t_->map_mu_);
    for (auto it : events_) t_->unuse(it);
  }
  if (wide_)
    t_->wide_mu_.unlock();
  else if (shared_)
    t_->wide_mu_.unlock_shared();
}

}  // namespace eventfs
