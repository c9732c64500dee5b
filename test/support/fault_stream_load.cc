// The stream load of the fault tests: marker writers, stream readers, and the
#include "support/fault_stream_load.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace eventfs_it::fault {

std::string write_marker_range(const std::string& trace_marker, int cpu, int lo, int hi) {
  std::string err;
  std::thread t([&] {
    pin_current_thread(cpu);
    int fd = ::open(trace_marker.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      err = "open " + trace_marker + ": " + std::strerror(errno);
      return;
    }
    for (int n = lo; n < hi; ++n) {
      std::string s = marker_text(n);
      if (::write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) {
        err = "write: " + std::string(std::strerror(errno));
        break;
      }
      if ((n - lo) % 20 == 19) std::this_thread::sleep_for(200us);
    }
    ::close(fd);
  });
  t.join();
  return err;
}

std::vector<int> markers_in_range(Collector& col, bool binary, unsigned id, int lo, int hi) {
  std::vector<std::string> texts;
  if (binary) {
    for (const auto& r : col.Records())
      if (r.header.id == id)
        texts.emplace_back(r.payload.data(), strnlen(r.payload.data(), std::min<std::size_t>(64, r.payload.size())));
  } else {
    texts = col.Lines();
  }
  std::vector<int> out;
  for (const auto& t : texts) {
    auto at = binary ? t.find("m-") : t.find("text=m-");
    if (at == std::string::npos) continue;
    if (!binary) at += 5;
    if (at + 8 > t.size()) continue;
    int n = marker_number(t.substr(at, 8));
    if (n >= lo && n < hi) out.push_back(n);
  }
  return out;
}

std::string describe_sequence(const std::vector<int>& got, int lo, int hi) {
  std::size_t first = 0;
  while (first < got.size() && static_cast<int>(first) < hi - lo && got[first] == lo + static_cast<int>(first)) ++first;
  return std::to_string(got.size()) + " markers of " + std::to_string(hi - lo) + "; first difference at position " +
         std::to_string(first) + ": got " + (first < got.size() ? marker_text(got[first]) : "<end>");
}

bool every_ring_closed(const MountedEventfs& m, int cpus) {
  for (int c = 0; c < cpus; ++c)
    if (parse_stats(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")))["reader"] != "closed") return false;
  return true;
}

std::string ring_modes(const MountedEventfs& m, int cpus) {
  std::string out;
  for (int c = 0; c < cpus; ++c)
    out += " cpu" + std::to_string(c) + ":" +
           parse_stats(slurp(m / ("per_cpu/cpu" + std::to_string(c) + "/stats")))["reader"];
  return out;
}

std::shared_ptr<StreamReader> start_reader(const std::string& path) {
  auto r = std::make_shared<StreamReader>();
  r->path = path;
  r->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) {
    r->last_n = -1;
    r->last_err = errno;
    r->done = true;
    return r;
  }
  // Detached: a read the daemon never answers must not hang the test; the
  // thread owns the state it writes.
  std::thread([r] {
    std::vector<char> buf(EVENTFS_RECORD_MAX_SIZE);
    for (;;) {
      r->last_start = now_ns();
      ssize_t n = ::read(r->fd, buf.data(), buf.size());
      r->last_err = n < 0 ? errno : 0;
      r->last_end = now_ns();
      r->last_n = n;
      ++r->reads;
      if (n <= 0) break;
      r->bytes += n;
    }
    ::close(r->fd);
    r->done = true;
  }).detach();
  return r;
}

MarkerWriter::MarkerWriter(std::string trace_marker, int first, int end, int burst, std::chrono::microseconds pause,
                           int cpu)
    : path_(std::move(trace_marker)) {
  thread_ = std::thread([this, first, end, burst, pause, cpu] {
    if (cpu >= 0) pin_current_thread(cpu);
    int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      error_ = "open " + path_ + ": " + std::strerror(errno);
      return;
    }
    for (int n = first; !stop_;) {
      for (int i = 0; i < burst && !stop_; ++i) {
        std::string t = marker_text(n);
        if (::write(fd, t.data(), t.size()) != static_cast<ssize_t>(t.size())) {
          error_ = "write " + path_ + ": " + std::strerror(errno);
          stop_ = true;
          break;
        }
        ++written_;
        n = n + 1 < end ? n + 1 : first;
      }
      std::this_thread::sleep_for(pause);
    }
    ::close(fd);
  });
}

void MarkerWriter::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

::testing::AssertionResult RoundLoad::Start() {
  inst_ = instance_dir(m_.instance());
  env_ = make_env(m_.path(), read_header(inst_));
  if (int e = write_once(m_ / env_.held.rel, env_.held.add + "\n"))
    return ::testing::AssertionFailure() << "held trigger: " << errno_desc(e) << "; " << slurp(m_ / "error_log");
  if (auto r = open_shared(env_); !r) return r;
  if (!board_.ok()) return ::testing::AssertionFailure() << "mmap: " << std::strerror(errno);
  workers_ = std::make_unique<Workers>(env_, *board_);
  if (workers_->AddProcess({{kIrqEntryEnable, kIrqExitRawEnable}, {kOwnStacktrace}, false, true, true, seed_ + 1}) <
      0)
    return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  markers_ = std::make_unique<MarkerWriter>(inst_ + "/trace_marker", 0, 900000, 10, 1000us);
  const int cpus = mount_cpus(m_.path());
  readers_.push_back(start_reader(m_ / "trace_pipe"));
  readers_.push_back(start_reader(m_ / "trace_pipe"));
  for (int c = 0; c < cpus; ++c)
    readers_.push_back(start_reader(m_ / ("per_cpu/cpu" + std::to_string(c) + "/trace_pipe_raw")));
  kids_.SpawnCat(m_ / "trace_pipe");
  kids_.SpawnCat(m_ / "per_cpu/cpu0/trace_pipe_raw");
  workers_->AddThread({{kWakeupFilter, kWakeupEnable}, {kOwnMigrate, kOwnTraceoff}, true, false, true, seed_ + 2});
  workers_->AddThread(
      {{kFreeRawFilter, kWakeupRawEnable}, {kOwnRawSoftirq, kOwnCpuIdle}, false, true, true, seed_ + 3});
  workers_->Go(60s);  // until Stop
  return ::testing::AssertionSuccess();
}

void RoundLoad::Quiet() {
  if (markers_) markers_->Stop();
  if (workers_) workers_->Stop();
}

std::vector<std::string> RoundLoad::WaitReaders(std::chrono::milliseconds limit) {
  std::vector<std::string> out;
  wait_until(
      [&] {
        kids_.Reap();
        for (const auto& r : readers_)
          if (!r->done) return false;
        for (std::size_t i = 0; i < kids_.size(); ++i)
          if (!kids_.Status(i)) return false;
        return true;
      },
      limit);
  for (const auto& r : readers_)
    if (!r->done) out.push_back("reader thread of " + r->path);
  for (std::size_t i = 0; i < kids_.size(); ++i)
    if (!kids_.Status(i)) out.push_back("cat " + std::to_string(kids_.pid(i)));
  return out;
}

std::vector<std::string> RoundLoad::WaitWorkers(std::chrono::milliseconds limit) {
  auto stuck = workers_ ? workers_->Wait(limit) : std::vector<std::string>{};
  if (stuck.empty()) close_shared(env_);
  return stuck;
}

void RoundLoad::Finish() {
  Quiet();
  if (workers_) {
    workers_->Wait(5s);
    workers_->JoinAll();
    workers_.reset();
  }
  close_shared(env_);
  kids_.KillAll(SIGKILL, 2s);
}

void SignalTotals::add_readers(RoundLoad& load) {
  for (const auto& r : load.readers()) {
    ++streams;
    if (!r->done) continue;
    reader_reads += r->reads;
    reader_bytes += r->bytes;
    ++endings[r->last_n == 0 ? "end of file" : r->last_n < 0 ? errno_desc(r->last_err) : "data"];
  }
  streams += static_cast<long>(load.kids().size());
  markers += load.markers_written();
}

std::string SignalTotals::endings_text() const {
  std::string out;
  for (const auto& [k, n] : endings) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(n);
  return out;
}

}  // namespace eventfs_it::fault
