// The locks of the control files, one per raw event: a write holds those of
// every event it changes (its own, and the targets of its triggers) for its
// whole length, taken in name order; a read holds its own event's. Writes to
// other events go on meanwhile.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace eventfs {

class EventLockTable {
 public:
  // A write that changes more events than this (a glob over many) takes the
  // whole table for itself instead: it would wait for nearly every other
  // write anyway, and a thread holding thousands of mutexes helps no one.
  static constexpr std::size_t kMaxEventLocks = 32;

  // What one write or read holds, released in reverse order at its end.
  class Held;

  // A write's locks of the event directories `dirs` (any order, repeats
  // allowed): shared use of the table and each event's mutex in name order,
  // or the whole table for more than kMaxEventLocks events.
  Held for_write(std::vector<std::string> dirs);
  // A read's lock: the event's mutex alone, not the table's shared use (a
  // wide write does not hold up reads of other events).
  Held for_read(const std::string& dir);

  // Events whose mutex is held or waited for now: the map keeps only those.
  std::size_t in_use() const;

 private:
  // One raw event's mutex, kept while anyone holds or waits for it (users).
  struct EventMutex {
    std::mutex mu;
    std::size_t users = 0;
  };
  using Mutexes = std::map<std::string, EventMutex>;

  Mutexes::iterator use(const std::string& dir);  // map_mu_ held
  void unuse(Mutexes::iterator it);               // map_mu_ held

  std::shared_mutex wide_mu_;  // shared by writes that lock their events, whole for one that changes many
  mutable std::mutex map_mu_;  // mutexes_; never held while an event's mutex is waited for
  Mutexes mutexes_;
};

class EventLockTable::Held {
 public:
  Held(Held&& o) noexcept;
  ~Held();
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  Held& operator=(Held&&) = delete;

 private:
  friend class EventLockTable;
  explicit Held(EventLockTable& t) : t_(&t) {}

  EventLockTable* t_;
  bool wide_ = false;    // holds wide_mu_ whole
  bool shared_ = false;  // holds wide_mu_ shared
  std::vector<Mutexes::iterator> events_;
};

}  // namespace eventfs
