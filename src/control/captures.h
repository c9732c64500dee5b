// Carrying out save: triggers (eventfs(5), "Variables"). The kernel has no
// trigger that stores a value, so a capture happens when eventfs reads the
// triggering event's record: each armed save has a tracefs instance of its
// own (<instance>-save<N>) in which only its event is enabled, with the
// save's condition as the event's filter, and one thread reads those
// instances' rings whether or not any stream is open. Their records never
// reach the main instance, so users' streams see the event only if they
// enabled it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "error/result.h"
#include "control/own_threads.h"
#include "format/raw_event.h"

namespace eventfs {

struct CaptureSpec {
  std::string system, event;  // the raw event
  std::string raw_filter;     // the condition in the kernel's names; "" for none
  std::string variable;
  RawField field;             // an integer of 1, 2, 4 or 8 bytes
  std::optional<std::uint64_t> count;  // captures left; none: unlimited
  // The event's task fields (pid_t, common_pid among them): a record that
  // names one of the daemon's own threads in any of them is not captured.
  std::vector<RawField> task_fields;
};

// One captured value: the last one of its variable in a batch.
struct Captured {
  std::string variable;
  std::int64_t value;
  std::uint64_t ts;  // the record's time stamp
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

// Told of the captures of one batch, outside the engine's locks: the last
// value of each variable captured in it, with its record's time stamp
// (CLOCK_MONOTONIC nanoseconds: the capture instances use the kernel's
// "mono" trace clock). `stopping()` turns true when the engine is asked to
// stop: what the sink still has to do for the batch can be left undone.
using CaptureSink = std::function<void(const std::vector<Captured>& batch, const std::function<bool()>& stopping)>;
// Told why a capture stopped (its ring failed), outside the engine's locks.
using CaptureProblem = std::function<void(const std::string& why)>;

class InstanceCaptures final : public CaptureEngine {
 public:
  static constexpr std::size_t kMaxCaptures = 16;
  // Batches start at most this often while records keep coming: a hot
  // event's records then make batches of many, read at one wake-up each,
  // while a rare event's record is read as soon as it comes.
  static constexpr auto kBusyBatchInterval = std::chrono::milliseconds(1);
  // Records taken from one ring in one batch, at most: a ring that fills
  // faster than this is overwritten (its oldest records go; a batch keeps
  // only the last value of each variable anyway).
  static constexpr std::size_t kMaxRecordsPerRing = 4096;

  // `root` is the tracefs, `base` the daemon's instance name. The thread
  // starts with the first capture armed.
  InstanceCaptures(std::string root, std::string base, CaptureSink sink, CaptureProblem problem = nullptr);
  ~InstanceCaptures() override;  // stops, then disarms every capture and removes its instance
  // Asks the thread to stop (the batch being delivered is told through
  // `stopping`) without waiting for it: the first step of a shutdown.
  void request_stop();
  // Stops and waits for the thread: at most the kernel write under way.
  void stop();
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
  // Waits on the wake descriptor until `until` (or a wake-up).
  void pause_until(std::chrono::steady_clock::time_point until);
  // When the daemon's known threads changed, every armed capture's kernel
  // filter is rewritten to leave them out; a refusal is told in `problems`
  // (mu_ held).
  void follow_own_threads(std::vector<std::string>& problems);
  Status apply_filter(Armed& a);  // mu_ held

  std::string root_, base_;
  CaptureSink sink_;
  CaptureProblem problem_;
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<Armed>> armed_;  // guarded by mu_
  int next_id_ = 1;                               // guarded by mu_
  OwnThreads own_threads_;                        // guarded by mu_
  std::atomic<bool> stop_{false};
  int wake_fd_ = -1;
  std::thread thread_;  // started by the first arm() (under mu_)
};

// The kernel filter that leaves records naming one of `tids` in any of
// `fields` out, joined with `condition` (may be ""): what a capture's
// instance filters its event with. "" when there is nothing to filter.
std::string capture_filter(const std::string& condition, const std::vector<RawField>& fields,
                           const std::vector<int>& tids);
}  // namespace eventfs
