// Reading a stream: the Collector (see stream_reading.h).
#include "support/stream_reading.h"
#include "support/time_scale.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace eventfs_it::stream {

::testing::AssertionResult Collector::Start() {
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

void Collector::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  Close();
}

std::vector<std::string> Collector::Lines() {
  std::lock_guard lock(mu_);
  return lines_;
}

std::vector<Record> Collector::Records() {
  std::lock_guard lock(mu_);
  return records_;
}

std::size_t Collector::LineCount() {
  std::lock_guard lock(mu_);
  return lines_.size();
}

std::size_t Collector::RecordCount() {
  std::lock_guard lock(mu_);
  return records_.size();
}

std::uint64_t Collector::Bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<std::string> Collector::Problems() {
  std::lock_guard lock(mu_);
  auto p = problems_;
  for (std::size_t i = 0; i < partial_.size(); ++i)
    if (!partial_[i].empty()) p.push_back(paths_[i] + ": unterminated text at the end: " + partial_[i]);
  return p;
}

bool Collector::WaitQuiet(std::chrono::milliseconds quiet, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + scaled(limit);
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

void Collector::Close() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

void Collector::Run() {
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

void Collector::Problem(const std::string& p) {
  std::lock_guard lock(mu_);
  if (problems_.size() < 20) problems_.push_back(p);
}

void Collector::Consume(std::size_t i, const char* data, std::size_t n) {
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

}  // namespace eventfs_it::stream
