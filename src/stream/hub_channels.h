// The stream hub's two kinds of stream channel (fs/stream_file.h): the
// merged text of every CPU (trace_pipe, through TextMerge) and one CPU's
// records in the binary framing (per_cpu/cpuN/trace_pipe_raw), taken,
// or leased in place, from that CPU's queue. Like tracefs's own pipes, what
// one reader takes is gone for the others. Readers opening and closing
// start and end the session of open rings (RingSession).
#pragma once

#include <cstddef>
#include <string>

#include "fs/stream_file.h"
#include "stream/hub_cpu.h"
#include "stream/ring_session.h"
#include "stream/text_merge.h"

namespace eventfs {

// Whether CPU `cpu`'s queue (cpu < 0: any CPU's) has something to take.
bool queues_readable(HubCpus& cpus, int cpu);

// A binary stream's answer from CPU `cpu`'s queue `q` (its lock held), as
// StreamChannel::take() and lease() say: a lost-events record first where
// the queue has a gap before its front record.
bool take_records(RecordQueue& q, int cpu, std::size_t max, std::string& out);
bool lease_records(RecordQueue& q, std::size_t max, StreamChannel::Lease& out);

class TextChannel final : public StreamChannel {
 public:
  TextChannel(HubCpus& cpus, RingSession& session, TextMerge& merge) : cpus_(cpus), session_(session), merge_(merge) {}
  bool take(std::size_t max, std::string& out) override { return merge_.take(max, out); }
  bool readable() override { return queues_readable(cpus_, -1); }
  int error() override { return session_.error(); }
  void reader_opened() override { session_.reader_count(+1); }
  void reader_closed() override { session_.reader_count(-1); }
  // (Counted on every CPU: any CPU's records are news here.)
  void waiting(int delta) override {
    for (auto& c : cpus_) c->readers_waiting.fetch_add(delta);
  }
  void reader_parked() override {
    for (auto& c : cpus_) c->reader_parked.store(true, std::memory_order_relaxed);
  }

 private:
  HubCpus& cpus_;
  RingSession& session_;
  TextMerge& merge_;
};

class CpuChannel final : public StreamChannel {
 public:
  CpuChannel(HubCpus& cpus, RingSession& session, int cpu) : cpus_(cpus), session_(session), cpu_(cpu) {}
  // A lost-events record first where the queue dropped records.
  bool take(std::size_t max, std::string& out) override;
  bool lease(std::size_t max, Lease& out) override;
  void release(const Lease&) override;
  bool readable() override { return queues_readable(cpus_, cpu_); }
  int error() override { return session_.error(); }
  void reader_opened() override { session_.reader_count(+1); }
  void reader_closed() override { session_.reader_count(-1); }
  void waiting(int delta) override { queues().readers_waiting.fetch_add(delta); }
  void reader_parked() override { queues().reader_parked.store(true, std::memory_order_relaxed); }

 private:
  HubCpu& queues() { return *cpus_.at(static_cast<std::size_t>(cpu_)); }

  HubCpus& cpus_;
  RingSession& session_;
  int cpu_;
};

}  // namespace eventfs
