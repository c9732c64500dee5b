// Helpers for the record-stream integration tests: readers of eventfs's
// streams that never block the test, child `cat` readers that are always
// killed, a reference tracefs instance of our own decoded with libtraceevent
// (independently of eventfs's code), and threads that make known context
// switches or trace_marker writes. Each subject has its own header; this one
// brings them all in.
#pragma once

#include "support/stream_util.h"
#include "support/children.h"
#include "support/stream_reading.h"
#include "support/sched_switch.h"
#include "support/markers.h"
