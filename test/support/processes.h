// Processes: spawn, run, wait, and what /proc says about them.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/mount_table.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// Processes.

bool wait_exit(pid_t pid, std::chrono::milliseconds timeout, int& status);

// Alive and not a zombie (a non-child's zombie may linger if nobody reaps it).
bool process_alive(pid_t pid);

// Each thread of a process, "<comm> <state> <wchan>", for a failure message
// about a process that does not end ("" if it is gone).
std::string thread_states(pid_t pid);

// Start time of a process in clock ticks since boot (field 22 of stat).
std::string process_start_time(pid_t pid);

// This process's owner line: "<pid> <start time>".
std::string owner_line();

std::vector<std::string> process_argv(pid_t pid);

// Live eventfs processes (this build's binary) with an argument that contains `needle`.
std::vector<pid_t> eventfs_pids_mentioning(const std::string& needle);

// An anonymous in-memory file for a child's output: never fills up and
// blocks the child as a pipe would, and leaves nothing on disk.
int make_capture_fd(const char* name);

std::string read_capture(int fd);

// fork + exec `argv` with stdin from /dev/null and stdout/stderr into the
// given fds (-1: /dev/null), in `cwd` if not empty. Returns the pid or -1.
pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
            const std::string& cwd = "");

struct RunResult {
  bool timed_out = false;
  int status = -1;  // wait status
  std::string out, err;
  bool exited() const { return !timed_out && WIFEXITED(status); }
  int exit_code() const { return exited() ? WEXITSTATUS(status) : -1; }
  // "exit N", "killed by signal N" or "timed out", then the output.
  std::string describe() const;
};

// Runs a command to completion (killed after `timeout`).
RunResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = 10s,
              const std::string& cwd = "");

// Runs a shell pipeline through popen (bounded by coreutils' timeout inside
// the command); returns stdout and sets `exit_code`.
std::string shell(const std::string& command, int* exit_code = nullptr);

// Unmounts `path` lazily: fusermount3 first, umount2(MNT_DETACH) if that fails.
void force_unmount(const std::string& path);

}  // namespace eventfs_it
