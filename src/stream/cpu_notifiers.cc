#include "stream/cpu_notifiers.h"

#include <pthread.h>

#include <utility>

#include <fmt/format.h>

namespace eventfs {

CpuNotifiers::CpuNotifiers(int cpus, HubServices& hub) : hub_(hub) {
  for (int i = 0; i < cpus; ++i) slots_.push_back(std::make_unique<Slot>());
}

void CpuNotifiers::start(int cpu) {
  threads_.emplace_back([this, cpu] { loop(cpu); });
}

void CpuNotifiers::notify(int cpu) {
  for (auto& [of, l] : listeners_)
    if (cpu < 0 || of < 0 || of == cpu) l();
}

void CpuNotifiers::request(int cpu) {
  Slot& s = *slots_[static_cast<std::size_t>(cpu)];
  {
    std::lock_guard lock(s.mu);
    s.pending = true;
  }
  s.cv.notify_one();
}

void CpuNotifiers::loop(int cpu) {
  Slot& s = *slots_[static_cast<std::size_t>(cpu)];
  hub_.place_thread(cpu);
  // (Named once placed, as top -H and ps -L show it.)
  pthread_setname_np(pthread_self(), fmt::format("eventfs-tell{}", cpu).substr(0, 15).c_str());
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&s] { return s.pending || s.stopping; });
    hub_.notifier_woken(cpu);
    if (s.pending) {  // (before stopping: the drainers' last requests)
      s.pending = false;
      lock.unlock();
      notify(cpu);
      lock.lock();
      continue;
    }
    return;
  }
}

void CpuNotifiers::stop() {
  for (auto& s : slots_) {
    {
      std::lock_guard lock(s->mu);
      s->stopping = true;
    }
    s->cv.notify_one();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace eventfs
