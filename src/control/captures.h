// Carrying out save: triggers (eventfs(5), "Variables"). The kernel has no
// trigger that stores a value, so a capture happens when eventfs reads the
// triggering event's record: each armed save has a tracefs instance of its
// own (<instance>-save<N>) in which only its event is enabled, with the
// save's condition as the event's filter, and one thread reads those
// instances' rings whether or not any stream is open. Their records never
// reach the main instance, so users' streams see the event only if they
// enabled it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "error/result.h"
#include "format/raw_event.h"

namespace eventfs {

struct CaptureSpec {
  std::string system, event;  // the raw event
  std::string raw_filter;     // the condition in the kernel's names; "" for none
  std::string variable;
  RawField field;             // an integer of 1, 2, 4 or 8 bytes
  std::optional<std::uint64_t> count;  // captures left; none: unlimited
};

class CaptureEngine {
 public:
  virtual ~CaptureEngine() = default;
  // Arms a capture: its id (> 0), or why not.
  virtual Result<int> arm(const CaptureSpec& spec) = 0;
  virtual void disarm(int id) = 0;
  // The condition again (a variable it names has changed).
  virtual Status refilter(int id, const std::string& raw_filter) = 0;
  // Captures left, when it has a count.
  virtual std::optional<std::uint64_t> remaining(int id) const = 0;
};

// Told of each capture, outside the engine's locks: the variable, the value
// and the record's time stamp (CLOCK_MONOTONIC nanoseconds: the capture
// instances use the kernel's "mono" trace clock).
using CaptureSink = std::function<void(const std::string& variable, std::int64_t value, std::uint64_t ts)>;

class InstanceCaptures final : public CaptureEngine {
 public:
  static constexpr std::size_t kMaxCaptures = 16;

  // `root` is the tracefs, `base` the daemon's instance name.
  InstanceCaptures(std::string root, std::string base, CaptureSink sink);
  ~InstanceCaptures() override;  // disarms every capture and removes its instance
  InstanceCaptures(const InstanceCaptures&) = delete;
  InstanceCaptures& operator=(const InstanceCaptures&) = delete;

  // Removes the save instances a killed daemon of instance `base` left
  // behind (reclaimed as the main instance is); a live daemon's, or ones
  // another program made, stay.
  static void remove_stale(const std::string& root, const std::string& base);

  Result<int> arm(const CaptureSpec& spec) override;
  void disarm(int id) override;
  Status refilter(int id, const std::string& raw_filter) override;
  std::optional<std::uint64_t> remaining(int id) const override;

 private:
  struct Armed;
  void run();
  void wake();

  std::string root_, base_;
  CaptureSink sink_;
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<Armed>> armed_;  // guarded by mu_
  int next_id_ = 1;                               // guarded by mu_
  bool stop_ = false;                             // guarded by mu_
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace eventfs
