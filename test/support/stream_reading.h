// Reading a stream: the Collector and its records.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "eventfs/record.h"

#include "support/children.h"

namespace eventfs_it::stream {

struct Record {
  std::size_t stream;  // index into the collector's paths
  eventfs_record_header header;
  std::string payload;  // header.size - sizeof header bytes, padding included
};

// Reads eventfs's streams without ever blocking the test: poll(2) on the
// files, then a non-blocking read of 64 KiB (EVENTFS_RECORD_MAX_SIZE) from each
// ready one. Text streams are split into lines; binary ones into records,
// each checked against include/eventfs/record.h.
class Collector {
 public:
  Collector(std::vector<std::string> paths, bool binary) : paths_(std::move(paths)), binary_(binary) {}
  ~Collector() { Stop(); }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  ::testing::AssertionResult Start();

  // Stops reading and closes the files.
  void Stop();

  std::vector<std::string> Lines();
  std::vector<Record> Records();
  std::size_t LineCount();
  std::size_t RecordCount();
  std::uint64_t Bytes();
  // Read errors, malformed records, text not ending in a newline...
  std::vector<std::string> Problems();

  // Waits until `pred` holds (it may call the accessors above).
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    return wait_until(pred, limit);
  }

  // Waits until nothing has come for `quiet`; false if data kept coming for `limit`.
  bool WaitQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds limit);

 private:
  void Close();
  void Run();
  void Problem(const std::string& p);
  void Consume(std::size_t i, const char* data, std::size_t n);

  std::vector<std::string> paths_;
  bool binary_;
  std::vector<int> fds_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> partial_;
  std::vector<std::string> lines_;
  std::vector<Record> records_;
  std::vector<std::string> problems_;
  std::uint64_t bytes_ = 0;
  Clock::time_point last_data_;
};

}  // namespace eventfs_it::stream
