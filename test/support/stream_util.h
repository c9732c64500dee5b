// Stream-test helpers: instance files, stats, CPUs, waiting.
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

#include "support/mounted_eventfs.h"

namespace eventfs_it::stream {

pid_t current_tid();

std::string instance_dir(const std::string& name);

// One open and one write(2) of exactly `data` (what `echo -n data > path`
// does). 0, the errno, or -1 for a short write.
int write_once(const std::string& path, std::string_view data, int flags = O_WRONLY | O_TRUNC);

std::string errno_text(int e);

// A write that must be accepted (the mount's error_log, if any, in the message).
::testing::AssertionResult Writes(const std::string& path, std::string_view data,
                                  const std::string& error_log = "");

// Resizes the rings of the tracefs instance at `instance_dir` as eventfs
// does (Instance::set_buffer_kb): where the kernel had not expanded its
// rings yet, the instance's first use of tracing comes first, so the top
// level is not left at its boot size.
::testing::AssertionResult ResizesRings(const std::string& instance_dir, std::string_view kb);

// True when the top level's buffer_size_kb `after` is what `before` was, or
// what the kernel's first use of tracing makes of an unexpanded "S
// (expanded: N)": N or more, never S again.
bool TopLevelRingsAsBefore(const std::string& before, const std::string& after);

// "key: value" lines (tracefs and eventfs stats files) -> map; the value trimmed.
std::map<std::string, std::string> parse_stats(const std::string& text);

// A numeric value of a stats text; -1 if missing or not a number.
long long stat_value(const std::string& text, const std::string& key);

// The kernel's count of unread entries of an instance, summed over CPUs.
long long kernel_unread_entries(const std::string& inst, int cpus);

// CPUs of a mount: its per_cpu/cpuN directories.
int mount_cpus(const std::string& mnt);

// CPUs this process may run on.
std::vector<int> allowed_cpus();

bool pin_current_thread(int cpu);

// Polls `pred` every 2 ms until it holds or `limit` passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit);

long ms_since(Clock::time_point t);

// ---------------------------------------------------------------------------
// Processes blocked in read(2).

// Is `pid` (a process or a thread id) inside read(2) right now?
bool in_read_syscall(pid_t pid);

// Child processes (readers) that are killed and reaped whatever happens.

}  // namespace eventfs_it::stream
