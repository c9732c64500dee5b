// One descriptor that says whether any CPU's ring of a tracefs instance
// holds a record nobody has consumed: the instance's own trace_pipe, never
// read, only polled. The kernel wakes its pollers at the first record
// written on any CPU, whatever buffer_percent says (the watermark applies
// only to one CPU's files), and polls it readable for as long as a record
// is unread anywhere. The ring readers wait on it while nothing comes, so an
// idle open stream costs almost no wakeups. The kernel's code admits its wakeup can miss a lone
// record (its writers take no barrier): the readers still look once a
// second.
//
// Opening it consumes nothing. The kernel lets an instance's trace_pipe be
// open once at a time (another open gets EBUSY, and so does one of the
// instance's per_cpu/cpuN/trace_pipe while it is open), and refuses to
// remove an instance while it is open (EBUSY): it is held only while
// streams are open. With the instance's options/block set, the kernel
// polls it readable at all times (and trace_pipe_raw too).
#pragma once

#include "error/result.h"
#include "tracefs/ring_files.h"

namespace eventfs {

// The instance's trace_pipe, opened for polling (non-blocking), or why it
// cannot be (not tracefs, as the plain files of a test's tree are; already
// open elsewhere).
Result<int> open_any_cpu_readiness(const RingFiles& files);

}  // namespace eventfs
