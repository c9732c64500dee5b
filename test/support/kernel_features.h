// What the running kernel has of what eventfs uses where it can, so that a
// test on an older kernel checks what eventfs documents it does without it
// (eventfs(8), "KERNELS"), instead of the newer kernel's behaviour.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace eventfs_it {

class MountedEventfs;

// uname(2)'s release is at least major.minor.
bool kernel_at_least(int major, int minor);

// Linux 6.10 and later map trace_pipe_raw (TRACE_MMAP_IOCTL_GET_READER):
// -o reader=mmap works.
bool kernel_maps_rings();

// Linux 6.8 and later have buffer_subbuf_size_kb.
bool kernel_has_subbuf_size();

// Before Linux 5.18 each instance's sched_switch probe reads the task's state
// itself, so two instances can record different prev_state for one switch: a
// wakeup on another CPU may set TASK_WAKING (printed R) between the probes.
// From 5.18 the state is read once and passed to every probe.
bool kernel_reads_switch_state_per_probe();

// The reader a mount made with -o reader=`asked` uses on this kernel (the
// per_cpu/cpuN/stats "reader:" line): auto reads with read(2) on every
// kernel (eventfs(8), -o reader=).
std::string reader_in_use(const std::string& asked);

// eventfs(8) on -o reader=mmap where the kernel cannot map the rings: the
// mount is made, a read of `stream` (a file of the mount `m`) fails with
// EIO, and error_log says "cannot read the ring buffer: PATH: REASON (the
// kernel maps trace_pipe_raw from Linux 6.10)".
::testing::AssertionResult MmapRefusedAsDocumented(const MountedEventfs& m, const std::string& stream);

}  // namespace eventfs_it
