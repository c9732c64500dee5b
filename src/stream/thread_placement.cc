#include "stream/thread_placement.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

void ThreadPriority::apply() {
  if (fifo_) {
    sched_param sp{};
    sp.sched_priority = *fifo_;
    int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (e == 0) return;
    std::call_once(fifo_warning_, [&] {
      std::fprintf(stderr, "eventfs: cannot make the ring readers SCHED_FIFO at priority %d: %s\n", *fifo_,
                   std::strerror(e));
    });
  }
  if (nice_ && setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), *nice_) != 0) {
    int e = errno;
    std::call_once(nice_warning_, [&] {
      std::fprintf(stderr, "eventfs: cannot set the nice value of the ring readers to %d: %s\n", *nice_,
                   std::strerror(e));
    });
  }
}

CpuVisit::CpuVisit(int cpu) { moved_ = allowed_on(cpu, was_) && move_to(cpu); }

CpuVisit::~CpuVisit() {
  if (moved_) (void)pthread_setaffinity_np(pthread_self(), sizeof was_, &was_);
}

}  // namespace eventfs
