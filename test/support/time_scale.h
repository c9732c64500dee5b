// The one factor every time limit of the integration tests is multiplied
// by: EVENTFS_TEST_TIME_SCALE (default 1), for machines slower than the one
// the limits were written on (the kernel matrix's VMs run under qemu's TCG,
// several times slower).
#pragma once

#include <chrono>

namespace eventfs_it {

// EVENTFS_TEST_TIME_SCALE, read once: a number from 1 to 100 (decimals
// allowed), 1 when unset or empty. Any other value ends the test program
// with one line on standard error.
double time_scale();

// `limit` times time_scale().
std::chrono::milliseconds scaled(std::chrono::milliseconds limit);

}  // namespace eventfs_it
