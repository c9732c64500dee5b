// One CTF stream file (stream_N) of one CPU, written a whole packet at a time.
// A lost-events record closes the open packet and raises the cumulative
// events_discarded the next packet carries, so a reader reports the gap
// between the two packets. A failed write truncates the file back to its
// last whole packet: what is on disk stays readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error/result.h"
#include "recorder/cpu_sink.h"

namespace eventfs::recorder {

class StreamWriter : public CpuSink {
 public:
  // The most one packet holds (but one larger event), and the least a
  // caller may choose (packet_size_for()).
  static constexpr std::size_t kPacketSize = 64 * 1024;
  static constexpr std::size_t kMinPacketSize = 4 * 1024;
  // The packet size of each of `streams` streams: 64 KiB, or less when
  // there are more than 256 (16 MiB in all, but at least 4 KiB each).
  static std::size_t packet_size_for(std::size_t streams);

  StreamWriter() = default;
  ~StreamWriter() override;
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Creates `path` (which must not exist); packets of at most
  // `packet_size` bytes (kMinPacketSize to kPacketSize).
  Status open(const std::string& path, std::uint32_t cpu, std::size_t packet_size = kPacketSize);

  // CpuSink: an event appended to the open packet; a loss closes the packet;
  // finish() writes the open packet (and an empty one carrying a loss not
  // yet written).
  Status add_event(std::uint64_t timestamp, std::uint32_t id, std::int32_t pid, const void* payload, std::size_t size,
                   std::size_t end, std::size_t align) override;
  Status add_lost(std::uint64_t timestamp, std::uint64_t count) override;
  Status finish() override;

  const std::string& path() const { return path_; }
  std::uint64_t bytes_written() const override { return file_size_; }
  std::uint64_t packets() const override { return packets_; }

 private:
  Status flush();
  void start_packet(std::uint64_t timestamp);

  std::string path_;
  int fd_ = -1;
  std::uint32_t cpu_ = 0;
  // Bytes past the packet's room that add_event()'s word-sized zeroing may
  // write (never part of a packet).
  static constexpr std::size_t kSlack = 8;
  std::vector<unsigned char> buf_;
  std::size_t packet_size_ = kPacketSize;
  std::size_t used_ = 0;             // bytes of the open packet; 0: none open
  std::size_t content_ = 0;          // where its last event's fields end (content_size)
  std::uint64_t begin_ = 0, end_ = 0;  // the open packet's time stamps
  std::uint64_t clock_ = 0;  // the time a reader of the open packet has reached
  std::uint64_t last_end_ = 0;       // timestamp_end of the last packet written
  std::uint64_t discarded_ = 0;      // cumulative lost events
  std::uint64_t discarded_written_ = 0;
  std::uint64_t file_size_ = 0, packets_ = 0;
};

}  // namespace eventfs::recorder
