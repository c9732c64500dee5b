// Child processes and threads that block in read(2) on a stream.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>
#include <functional>
#include <memory>
#include <regex>
#include <string_view>

#include <traceevent/event-parse.h>
extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include "eventfs/record.h"

#include "support/stream_util.h"

namespace eventfs_it::stream {

class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children();

  // `cat path` with its stdout in a memfd.
  pid_t SpawnCat(const std::string& path);

  std::size_t size() const { return kids_.size(); }
  pid_t pid(std::size_t i) const { return kids_[i].pid; }
  std::string Out(std::size_t i) const { return read_capture(kids_[i].out); }
  std::string Err(std::size_t i) const { return read_capture(kids_[i].err); }
  std::optional<int> Status(std::size_t i) const { return kids_[i].status; }

  // Every live child in read(2), within `limit`.
  bool WaitAllInRead(std::chrono::milliseconds limit);

  // How many are still running (not reaped) and inside read(2).
  std::size_t CountBlocked();

  // Waits until child i exits; its wait status, or nullopt after `limit`.
  std::optional<int> Wait(std::size_t i, std::chrono::milliseconds limit);

  void Signal(std::size_t i, int sig);

  // Signals every live child and waits (bounded) for them all; true if all exited.
  bool KillAll(int sig, std::chrono::milliseconds limit);

  void Reap();

 private:
  struct Kid {
    pid_t pid;
    int out, err;
    std::optional<int> status;
  };
  std::vector<Kid> kids_;
};

std::string describe_status(std::optional<int> st);

// One read(2) of a file from a thread of its own, so a read that waits
// where it should not cannot hang the test: Wait() gives up after its limit,
// Release() makes whatever it takes for the read to return (enabling an
// event, say), and a read that still does not return is left to the end of
// the mount (the thread then owns the descriptor and closes it).
class ThreadedRead {
 public:
  ThreadedRead(int fd, std::size_t size);
  ~ThreadedRead() { Finish(); }
  ThreadedRead(const ThreadedRead&) = delete;
  ThreadedRead& operator=(const ThreadedRead&) = delete;

  pid_t tid() const { return st_->tid; }
  pthread_t handle() { return thread_.native_handle(); }
  bool done() const { return st_->done; }
  bool Wait(std::chrono::milliseconds limit);
  ssize_t n() const { return st_->n; }
  int err() const { return st_->err; }
  std::string data();

  // Returns the read: `release` is called if it has not returned yet. True
  // if the thread ended (it is joined; the caller still owns the fd).
  bool Finish(const std::function<void()>& release = {}, std::chrono::milliseconds limit = 3s);

 private:
  struct State {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> done{false};
    std::mutex mu;
    bool abandoned = false;
    ssize_t n = 0;
    int err = 0;
    int fd = -1;
    std::string data;
  };
  std::shared_ptr<State> st_;
  std::thread thread_;
  bool joined_ = false;
};

}  // namespace eventfs_it::stream
