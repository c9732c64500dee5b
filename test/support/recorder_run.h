// eventfs-record run by the integration tests: in the background until a
// signal (Recorder), or to its end (record()), and its one-line failures.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/files.h"
#include "support/processes.h"

namespace eventfs_it {

using namespace std::chrono_literals;

// The recorder run in the background, ended by a signal.
class Recorder {
 public:
  explicit Recorder(std::vector<std::string> args) {
    std::vector<std::string> argv{EVENTFS_RECORD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    err_ = make_capture_fd("record-stderr");
    pid_ = spawn(argv, -1, err_);
  }
  ~Recorder() {
    if (pid_ > 0) Stop(SIGKILL);
    if (err_ >= 0) ::close(err_);
  }
  pid_t pid() const { return pid_; }
  // Whether its recording has begun: its reader threads run once its streams
  // are open, its events held and its start time read.
  bool Started() const { return pid_ > 0 && list_dir("/proc/" + std::to_string(pid_) + "/task").size() >= 2; }
  // Waits (bounded) for it to end on its own and returns the wait status
  // (-1: it did not end in time, and was killed).
  int Wait(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return status_;
    if (!wait_exit(pid_, limit, status_)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      status_ = -1;
    }
    pid_ = -1;
    return status_;
  }
  // Sends `sig` and returns the wait status (-1: it did not end within 15 s).
  int Stop(int sig = SIGINT) {
    if (pid_ <= 0) return status_;
    ::kill(pid_, sig);
    if (!wait_exit(pid_, 15s, status_)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      status_ = -1;
    }
    pid_ = -1;
    return status_;
  }
  std::string Stderr() const { return read_capture(err_); }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  int status_ = -1;
};

// One line on stderr, from `program` (eventfs-record, eventfs-convert).
inline ::testing::AssertionResult OneErrorLine(const RunResult& r, const std::string& needle,
                                               const std::string& program = "eventfs-record") {
  if (!r.exited() || r.exit_code() == 0)
    return ::testing::AssertionFailure() << "expected a non-zero exit: " << r.describe();
  auto lines = split_lines(r.err);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.size() != 1 || lines[0].rfind(program + ": ", 0) != 0 ||
      lines[0].find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "expected one line '" << program << ": ...' with '" << needle
                                         << "': " << r.describe();
  return ::testing::AssertionSuccess();
}

inline RunResult record(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 30s) {
  std::vector<std::string> argv{EVENTFS_RECORD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return eventfs_it::run(argv, timeout);
}

}  // namespace eventfs_it
