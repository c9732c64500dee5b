// An in-memory tracefs instance that answers control writes the way the 6.18
// kernel does (as far as the controller relies on it), for unit tests.
#pragma once

#include <cerrno>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracefs/instance.h"

namespace eventfs::testing {

class FakeInstance final : public InstanceFiles {
 public:
  static constexpr const char* kHeader =
      "# Available triggers:\n# traceon traceoff stacktrace enable_event disable_event\n";

  Result<std::string> read(const std::string& rel) const override;
  Status write(const std::string& rel, std::string_view data) const override;
  Status truncate(const std::string& rel) const override;

  // The kernel's answers, as errnos (0: done).
  int read_into(const std::string& rel, std::string& out) const;
  int write_code(const std::string& rel, std::string_view data) const;
  int truncate_code(const std::string& rel) const;

  const std::string& path() const override { return path_; }

  // What the kernel now has, for assertions.
  std::vector<std::string> triggers(const std::string& dir) const;
  std::string filter(const std::string& dir) const;
  bool enabled(const std::string& dir) const;

  mutable int fail_next = 0;  // the next write fails with this errno
  // After `fail_after` more writes, one fails with `fail_errno`; the triggers
  // of the event `fire_before_failing` fire first, as they may in the kernel
  // while a write goes on.
  mutable int fail_after = -1;
  mutable int fail_errno = ENOMEM;
  mutable std::string fire_before_failing;
  // Called before each write, outside the instance's lock (a slow kernel write).
  mutable std::function<void(const std::string& rel)> before_write;
  mutable int writes = 0;

  // The event's enable_event and disable_event triggers fire: their targets
  // are switched on or off (shown as "1*"/"0*" while a trigger holds them, and
  // as they are once it is removed, as the kernel's soft mode does).
  void fire(const std::string& dir) const;

 private:
  static std::pair<std::string, std::string> split(const std::string& rel);

  void fire_locked(const std::string& dir) const;

  bool armed(const std::string& dir) const;

  // "cmd[:sys:ev][:N][ if f]" -> the kernel's "cmd[:sys:ev]:count=N|unlimited[ if f]"
  int write_trigger(const std::string& dir, const std::string& d) const;

  mutable std::mutex mu_;
  mutable std::map<std::string, bool> enabled_;
  mutable std::map<std::string, std::string> filters_;
  mutable std::map<std::string, std::vector<std::string>> triggers_;
  mutable std::string kernel_log_;
  std::string path_ = "/fake/instances/eventfs";
};

}  // namespace eventfs::testing
