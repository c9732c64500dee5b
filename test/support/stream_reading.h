// Reading a stream: the Collector and its records.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>
#include <functional>
#include <memory>
#include <regex>
#include <string_view>

#include <traceevent/event-parse.h>
extern "C" {  // kbuffer.h has no extern "C" of its own
#include <traceevent/kbuffer.h>
}

#include "eventfs/record.h"

#include "support/children.h"

namespace eventfs_it::stream {

struct Record {
  std::size_t stream;  // index into the collector's paths
  eventfs_record_header header;
  std::string payload;  // header.size - sizeof header bytes, padding included
};

class Collector {
 public:
  Collector(std::vector<std::string> paths, bool binary) : paths_(std::move(paths)), binary_(binary) {}
  ~Collector() { Stop(); }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  ::testing::AssertionResult Start() {
    for (const auto& p : paths_) {
      int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        int e = errno;
        Close();
        return ::testing::AssertionFailure() << "open " << p << ": " << std::strerror(e);
      }
      fds_.push_back(fd);
    }
    partial_.resize(paths_.size());
    last_data_ = Clock::now();
    thread_ = std::thread([this] { Run(); });
    return ::testing::AssertionSuccess();
  }

  // Stops reading and closes the files.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    Close();
  }

  std::vector<std::string> Lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::vector<Record> Records() {
    std::lock_guard lock(mu_);
    return records_;
  }
  std::size_t LineCount() {
    std::lock_guard lock(mu_);
    return lines_.size();
  }
  std::size_t RecordCount() {
    std::lock_guard lock(mu_);
    return records_.size();
  }
  std::uint64_t Bytes() {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  // Read errors, malformed records, text not ending in a newline...
  std::vector<std::string> Problems() {
    std::lock_guard lock(mu_);
    auto p = problems_;
    for (std::size_t i = 0; i < partial_.size(); ++i)
      if (!partial_[i].empty()) p.push_back(paths_[i] + ": unterminated text at the end: " + partial_[i]);
    return p;
  }

  // Waits until `pred` holds (it may call the accessors above).
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    return wait_until(pred, limit);
  }

  // Waits until nothing has come for `quiet`; false if data kept coming for `limit`.
  bool WaitQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    for (;;) {
      Clock::time_point last;
      {
        std::lock_guard lock(mu_);
        last = last_data_;
      }
      if (Clock::now() - last >= quiet) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
  }

 private:
  void Close() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

  void Run() {
    std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
    std::vector<pollfd> pfds;
    for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
    while (!stop_) {
      for (auto& p : pfds) p.revents = 0;
      int r = ::poll(pfds.data(), pfds.size(), 20);
      if (r < 0 && errno != EINTR) {
        Problem(std::string("poll: ") + std::strerror(errno));
        std::this_thread::sleep_for(20ms);
        continue;
      }
      // Read every stream after each poll round, ready or not: a stream whose
      // poll notification is late must still be drained (poll itself is
      // tested on its own).
      for (std::size_t i = 0; i < fds_.size(); ++i) {
        for (int rounds = 0; rounds < 64 && !stop_; ++rounds) {
          ssize_t n = ::read(fds_[i], buf.data(), buf.size());
          if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) Problem(paths_[i] + ": read: " + std::strerror(errno));
            break;
          }
          if (n == 0) break;  // end of file: the mount is going away
          Consume(i, buf.data(), static_cast<std::size_t>(n));
        }
      }
    }
  }

  void Problem(const std::string& p) {
    std::lock_guard lock(mu_);
    if (problems_.size() < 20) problems_.push_back(p);
  }

  void Consume(std::size_t i, const char* data, std::size_t n) {
    std::lock_guard lock(mu_);
    bytes_ += n;
    last_data_ = Clock::now();
    if (!binary_) {
      std::string& part = partial_[i];
      part.append(data, n);
      std::size_t start = 0;
      for (std::size_t nl; (nl = part.find('\n', start)) != std::string::npos; start = nl + 1)
        lines_.push_back(part.substr(start, nl - start));
      part.erase(0, start);
      return;
    }
    // A read returns whole records only.
    std::size_t off = 0;
    while (off < n) {
      eventfs_record_header h;
      if (n - off < sizeof h) {
        if (problems_.size() < 20)
          problems_.push_back(paths_[i] + ": a read ended inside a record header (" + std::to_string(n - off) +
                              " bytes left of " + std::to_string(n) + ")");
        return;
      }
      std::memcpy(&h, data + off, sizeof h);
      // eventfs_record_check wants an aligned header: check a copy.
      alignas(8) char copy[sizeof(eventfs_record_header) + sizeof(eventfs_lost)] = {};
      std::memcpy(copy, data + off, std::min(sizeof copy, n - off));
      auto* hc = reinterpret_cast<eventfs_record_header*>(copy);
      // The size rules (against what the read returned), and a lost record's payload size.
      if (eventfs_record_check(hc, n - off) == 0) {
        if (problems_.size() < 20)
          problems_.push_back(paths_[i] + ": malformed record at offset " + std::to_string(off) + " of a " +
                              std::to_string(n) + "-byte read: size " + std::to_string(h.size) + " id " +
                              std::to_string(h.id));
        return;
      }
      Record rec;
      rec.stream = i;
      rec.header = h;
      rec.payload.assign(data + off + sizeof h, h.size - sizeof h);
      records_.push_back(std::move(rec));
      off += h.size;
    }
  }

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

// ---------------------------------------------------------------------------
// Context switches between two known threads.

}  // namespace eventfs_it::stream
