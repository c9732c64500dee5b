// Who enables each raw event of eventfs's instance: the stable events
// ("stable:<name>"), raw/ ("raw"), and holds through open files (the same
// names with "#<n>"). The kernel's enable of an event is on while anyone
// is among its users. A leaf: its lock is taken alone, briefly.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

namespace eventfs {

class EnableUsers {
 public:
  // The user a stable event's own enable is written as.
  static std::string stable_user(const std::string& name) { return "stable:" + name; }
  static constexpr const char* kRawUser = "raw";

  // A new name for a hold by `user` (unique for the controller's life).
  std::string hold_of(const std::string& user);

  // What a change of one user did to an event's users.
  struct Change {
    bool before = false;  // anyone enabled it before
    bool after = false;   // anyone does after
    bool had = false;     // `user` was among them before
  };
  // Adds (`on`) or removes `user` of `dir`.
  Change set(const std::string& dir, const std::string& user, bool on);
  // Puts `user` of `dir` back as `change` found it (the kernel refused).
  void undo(const std::string& dir, const std::string& user, const Change& change);

  // Whether anyone enables `dir`, and whether that includes stable event
  // `name` (its own enable or a hold through its file).
  struct Who {
    bool anyone = false;
    bool mine = false;
  };
  Who who(const std::string& dir, const std::string& name) const;

 private:
  mutable std::mutex mu_;  // what follows
  std::map<std::string, std::set<std::string>> users_;  // dir -> users
  unsigned long next_hold_ = 0;
};

}  // namespace eventfs
