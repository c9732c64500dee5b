// The queue's part of the per-record cost: reserve() and the write of one
// 88-byte record (a marker's char[64]), as the drainer does for each
// projected record, in an 8 MiB queue (eventfs's default) that a reader
// empties 1 MiB at a time (KeepsUp), or that is full so that each record
// drops the oldest (Full), or full with a reader's 1 MiB lease out half the
// time, so that records are also dropped at the back (FullWithLeases).
//   build/bench/record_queue_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "eventfs/record.h"
#include "stream/record_queue.h"

namespace {

using eventfs::RecordQueue;

constexpr std::size_t kQueueBytes = 8u << 20;
constexpr std::uint32_t kRecord = EVENTFS_RECORD_SIZE(64);

void put(RecordQueue& q, std::uint64_t ts) {
  if (std::uint8_t* at = q.reserve(7, kRecord, ts)) {
    eventfs_record_header h{kRecord, 1000, ts, 7, EVENTFS_RECORD_VERSION, 0};
    std::memcpy(at, &h, sizeof h);
    std::memset(at + sizeof h, 'x', kRecord - sizeof h);
  } else {
    q.drop_record();
  }
}

void BM_KeepsUp(benchmark::State& state) {
  RecordQueue q(kQueueBytes, kRecord);
  std::string out;
  std::uint64_t ts = 0;
  for (auto _ : state) {
    put(q, ++ts);
    if (ts % 8192 == 0) {
      out.clear();
      q.take_into(out, 1u << 20, false);
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Full(benchmark::State& state) {
  RecordQueue q(kQueueBytes, kRecord);
  std::uint64_t ts = 0;
  for (std::size_t i = 0; i < kQueueBytes / kRecord; ++i) put(q, ++ts);
  for (auto _ : state) put(q, ++ts);
  state.SetItemsProcessed(state.iterations());
}

void BM_FullWithLeases(benchmark::State& state) {
  RecordQueue q(kQueueBytes, kRecord);
  std::uint64_t ts = 0;
  for (std::size_t i = 0; i < kQueueBytes / kRecord; ++i) put(q, ++ts);
  std::string out;
  for (auto _ : state) {
    put(q, ++ts);
    if (ts % 8192 == 0) {
      if (q.pinned()) {
        q.unpin();
      } else if (q.has_dropped()) {  // a reader's take: the gap's report, then records
        q.take_dropped();
        out.clear();
        q.take_into(out, 1u << 20, false);
      } else {
        q.lease(1u << 20);
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_KeepsUp);
BENCHMARK(BM_Full);
BENCHMARK(BM_FullWithLeases);

}  // namespace

BENCHMARK_MAIN();
