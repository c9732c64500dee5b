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
  pid_t SpawnCat(const std::string& path) {
    int out = make_capture_fd("cat-out");
    int err = make_capture_fd("cat-err");
    pid_t pid = spawn({"/bin/cat", path}, out, err);
    kids_.push_back({pid, out, err, std::nullopt});
    return pid;
  }

  std::size_t size() const { return kids_.size(); }
  pid_t pid(std::size_t i) const { return kids_[i].pid; }
  std::string Out(std::size_t i) const { return read_capture(kids_[i].out); }
  std::string Err(std::size_t i) const { return read_capture(kids_[i].err); }
  std::optional<int> Status(std::size_t i) const { return kids_[i].status; }

  // Every live child in read(2), within `limit`.
  bool WaitAllInRead(std::chrono::milliseconds limit) {
    return wait_until(
        [&] {
          for (auto& k : kids_)
            if (k.status || !in_read_syscall(k.pid)) return false;
          return true;
        },
        limit);
  }

  // How many are still running (not reaped) and inside read(2).
  std::size_t CountBlocked() {
    Reap();
    std::size_t n = 0;
    for (auto& k : kids_)
      if (!k.status && in_read_syscall(k.pid)) ++n;
    return n;
  }

  // Waits until child i exits; its wait status, or nullopt after `limit`.
  std::optional<int> Wait(std::size_t i, std::chrono::milliseconds limit) {
    Kid& k = kids_[i];
    if (k.status) return k.status;
    int st = 0;
    if (wait_exit(k.pid, limit, st)) k.status = st;
    return k.status;
  }

  void Signal(std::size_t i, int sig) {
    if (!kids_[i].status) ::kill(kids_[i].pid, sig);
  }

  // Signals every live child and waits (bounded) for them all; true if all exited.
  bool KillAll(int sig, std::chrono::milliseconds limit) {
    for (auto& k : kids_)
      if (!k.status) ::kill(k.pid, sig);
    auto deadline = Clock::now() + limit;
    bool all = true;
    for (std::size_t i = 0; i < kids_.size(); ++i) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (!Wait(i, std::max(left, 0ms))) all = false;
    }
    return all;
  }

  void Reap() {
    for (auto& k : kids_) {
      if (k.status) continue;
      int st = 0;
      if (::waitpid(k.pid, &st, WNOHANG) == k.pid) k.status = st;
    }
  }

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
  ThreadedRead(int fd, std::size_t size) : st_(std::make_shared<State>()) {
    st_->fd = fd;
    thread_ = std::thread([st = st_, size] {
      st->tid = current_tid();
      std::vector<char> buf(size);
      ssize_t n = ::read(st->fd, buf.data(), buf.size());
      int e = errno;
      std::lock_guard lock(st->mu);
      st->n = n;
      st->err = e;
      if (n > 0) st->data.assign(buf.data(), static_cast<std::size_t>(n));
      st->done = true;
      if (st->abandoned) ::close(st->fd);
    });
  }
  ~ThreadedRead() { Finish(); }
  ThreadedRead(const ThreadedRead&) = delete;
  ThreadedRead& operator=(const ThreadedRead&) = delete;

  pid_t tid() const { return st_->tid; }
  pthread_t handle() { return thread_.native_handle(); }
  bool done() const { return st_->done; }
  bool Wait(std::chrono::milliseconds limit) {
    return wait_until([&] { return st_->done.load(); }, limit);
  }
  ssize_t n() const { return st_->n; }
  int err() const { return st_->err; }
  std::string data() {
    std::lock_guard lock(st_->mu);
    return st_->data;
  }

  // Returns the read: `release` is called if it has not returned yet. True
  // if the thread ended (it is joined; the caller still owns the fd).
  bool Finish(const std::function<void()>& release = {}, std::chrono::milliseconds limit = 3s) {
    if (!thread_.joinable()) return joined_;
    if (!st_->done && release) release();
    if (Wait(limit)) {
      thread_.join();
      joined_ = true;
      return true;
    }
    {
      std::lock_guard lock(st_->mu);
      if (!st_->done) st_->abandoned = true;
    }
    if (st_->done) {
      thread_.join();
      joined_ = true;
      return true;
    }
    thread_.detach();
    return false;
  }

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

// ---------------------------------------------------------------------------
// Reading eventfs's streams without ever blocking the test: poll(2) on the
// files, then a non-blocking read of 64 KiB (EVENTFS_RECORD_MAX_SIZE) from each
// ready one. Text streams are split into lines; binary ones into records,
// each checked against include/eventfs/record.h.

}  // namespace eventfs_it::stream
