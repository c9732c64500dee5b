// Records in the framing of <eventfs/record.h>, as a stream of the mount
// gives them, for the recorder's unit tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "eventfs/record.h"
#include "recorder/stream_writer.h"

namespace eventfs::recorder {

// Appends a record of event `id` with an 8-byte payload holding `value`.
inline void add_event_record(std::vector<unsigned char>& out, std::uint32_t id, std::uint64_t ts, std::uint64_t value) {
  eventfs_record_header h{};
  h.size = EVENTFS_RECORD_SIZE(sizeof value);
  h.id = id;
  h.timestamp = ts;
  h.pid = 42;
  h.version = EVENTFS_RECORD_VERSION;
  const std::size_t at = out.size();
  out.resize(at + h.size, 0);
  std::memcpy(out.data() + at, &h, sizeof h);
  std::memcpy(out.data() + at + sizeof h, &value, sizeof value);
}

// Appends a lost-events record of `count` at `ts`.
inline void add_lost_record(std::vector<unsigned char>& out, std::uint64_t ts, std::uint64_t count) {
  eventfs_record_header h{};
  h.size = EVENTFS_RECORD_SIZE(sizeof(eventfs_lost));
  h.id = EVENTFS_ID_LOST;
  h.timestamp = ts;
  h.version = EVENTFS_RECORD_VERSION;
  eventfs_lost l{};
  l.count = count;
  const std::size_t at = out.size();
  out.resize(at + h.size, 0);
  std::memcpy(out.data() + at, &h, sizeof h);
  std::memcpy(out.data() + at + sizeof h, &l, sizeof l);
}

// A CTF stream file <dir>/stream_<cpu> as a recorder's sink (null if it
// cannot be made).
inline std::unique_ptr<CpuSink> ctf_sink(const std::string& dir, int cpu) {
  auto w = std::make_unique<StreamWriter>();
  if (!w->open(dir + "/stream_" + std::to_string(cpu), static_cast<std::uint32_t>(cpu))) return nullptr;
  return w;
}

}  // namespace eventfs::recorder
