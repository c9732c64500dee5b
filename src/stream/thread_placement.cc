#include "stream/thread_placement.h"

#include <pthread.h>

namespace eventfs {
namespace {

// The calling thread's CPUs, when it may run on `cpu` (false otherwise).
bool allowed_on(int cpu, cpu_set_t& allowed) {
  return cpu >= 0 && cpu < CPU_SETSIZE && pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0 &&
         CPU_ISSET(cpu, &allowed);
}

bool move_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

}  // namespace

bool pin_to_cpu(int cpu) {
  cpu_set_t allowed;
  return allowed_on(cpu, allowed) && move_to(cpu);
}

CpuVisit::CpuVisit(int cpu) { moved_ = allowed_on(cpu, was_) && move_to(cpu); }

CpuVisit::~CpuVisit() {
  if (moved_) (void)pthread_setaffinity_np(pthread_self(), sizeof was_, &was_);
}

}  // namespace eventfs
