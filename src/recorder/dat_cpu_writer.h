// The pages of one CPU of a trace.dat (ring_page.h), written to a file of
// their own (<trace.dat>.cpuN, as trace-cmd does) that dat_file.cc copies
// into the trace.dat when the recording ends. Each event is the kernel's
// common fields (common_type the id dat_event_ids() maps, the record's pid)
// and the stable payload; a loss ends the page, and the next one carries
// the count as the kernel's missed-events mark. Also notes the tasks'
// names (task_names.h). A failed write truncates the file back to its last
// whole page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "recorder/cpu_sink.h"
#include "recorder/ring_page.h"
#include "recorder/task_names.h"

namespace eventfs::recorder {

class DatCpuWriter : public CpuSink {
 public:
  // Pages are written out this many at a time.
  static constexpr std::size_t kPagesPerWrite = 16;

  DatCpuWriter(const MountLayout& layout, const std::map<std::uint32_t, std::uint16_t>& ids, std::size_t page_size);
  ~DatCpuWriter() override;
  DatCpuWriter(const DatCpuWriter&) = delete;
  DatCpuWriter& operator=(const DatCpuWriter&) = delete;

  // Creates `path` (which must not exist).
  Status open(const std::string& path);

  Status add_event(std::uint64_t timestamp, std::uint32_t id, std::int32_t pid, const void* payload, std::size_t size,
                   std::size_t end, std::size_t align) override;
  Status add_lost(std::uint64_t timestamp, std::uint64_t count) override;
  Status finish() override;
  std::uint64_t bytes_written() const override { return file_size_; }
  std::uint64_t packets() const override { return file_size_ / page_size_; }

  const std::string& path() const { return path_; }
  const TaskNames& task_names() const { return names_; }

 private:
  Status end_page();
  Status write_out();

  const std::map<std::uint32_t, std::uint16_t>& ids_;
  std::size_t page_size_;
  RingPage page_;
  TaskNames names_;
  std::vector<unsigned char> scratch_;  // one event: common fields and payload
  std::vector<unsigned char> out_;      // whole pages not yet written
  std::string path_;
  int fd_ = -1;
  std::uint64_t file_size_ = 0;
};

}  // namespace eventfs::recorder
