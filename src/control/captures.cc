#include "control/captures.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "control/event_name.h"
#include "control/variables.h"
#include "ring/ring.h"
#include "tracefs/instance.h"
#include "tracefs/ring_files.h"

namespace eventfs {

struct InstanceCaptures::Armed {
  CaptureSpec spec;
  std::unique_ptr<Instance> instance;
  std::vector<std::unique_ptr<CpuRing>> rings;
  std::vector<bool> failed;  // by ring: its drain failed; no longer polled
  std::string event_dir;     // events/<system>/<event>
  std::string filter;        // what the kernel filters the event with ("" for none)
};

namespace {

// Takes the saved field out of each record of the one event enabled, but
// not of a record that names one of the daemon's own threads (the kernel
// filter leaves those out too, once it knows the thread).
class FieldSink final : public RingSink {
 public:
  FieldSink(const CaptureSpec& spec, OwnThreads& own,
            std::vector<std::pair<std::int64_t, std::uint64_t>>& out)
      : spec_(spec), own_(own), out_(out) {}
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    const RawField& f = spec_.field;
    if (f.offset + f.size > len) return;
    for (const RawField& t : spec_.task_fields) {
      if (t.offset + t.size > len) return;
      const auto tid = integer_from_bytes(raw + t.offset, t.size, t.is_signed);
      if (own_.is_own(tid)) return;
    }
    out_.emplace_back(integer_from_bytes(raw + f.offset, f.size, f.is_signed), ts);
  }
  void lost(std::uint64_t, std::uint64_t, bool) override {}

 private:
  const CaptureSpec& spec_;
  OwnThreads& own_;
  std::vector<std::pair<std::int64_t, std::uint64_t>>& out_;
};

}  // namespace

std::string capture_filter(const std::string& condition, const std::vector<RawField>& fields,
                           const std::vector<int>& tids) {
  std::string out;
  for (const RawField& f : fields)
    for (int tid : tids) out += fmt::format("{}{} != {}", out.empty() ? "" : " && ", f.name, tid);
  if (condition.empty()) return out;
  if (out.empty()) return condition;
  return "(" + condition + ") && " + out;
}

InstanceCaptures::InstanceCaptures(std::string root, std::string base, CaptureSink sink, CaptureProblem problem)
    : root_(std::move(root)), base_(std::move(base)), sink_(std::move(sink)), problem_(std::move(problem)) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

InstanceCaptures::~InstanceCaptures() {
  stop();
  armed_.clear();  // each instance is removed with it
  if (wake_fd_ >= 0) close(wake_fd_);
}

void InstanceCaptures::request_stop() {
  stop_ = true;
  wake();
}

void InstanceCaptures::stop() {
  request_stop();
  std::thread running;
  {
    std::lock_guard lock(mu_);  // (arm() starts the thread under it, never once stopping)
    running = std::move(thread_);
  }
  if (running.joinable()) running.join();
}

void InstanceCaptures::remove_stale(const std::string& root, const std::string& base) {
  for (const auto& name : Instance::names_starting(root, base + "-save")) {
    (void)Instance::open(root, name);  // reclaimed, then removed (the Result owns it)
  }
}

void InstanceCaptures::wake() {
  std::uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) {
    // The counter is full: the thread has a wake-up pending anyway.
  }
}

Status InstanceCaptures::apply_filter(Armed& a) {
  const std::string filter = capture_filter(a.spec.raw_filter, a.spec.task_fields, own_threads_.tids());
  if (filter == a.filter) return {};
  Status set = a.instance->write(a.event_dir + "/filter", filter.empty() ? "0" : filter);
  if (!set) return set;
  a.filter = filter;
  return {};
}

void InstanceCaptures::follow_own_threads(std::vector<std::string>& problems) {
  if (!own_threads_.take_changed()) return;
  for (auto& [id, a] : armed_)
    if (Status set = apply_filter(*a); !set)
      problems.push_back(
          fmt::format("save:{} on {}:{}: the kernel refused the filter leaving eventfs's threads out: {}",
                      a->spec.variable, a->spec.system, a->spec.event, std::strerror(set.code())));
}

Result<int> InstanceCaptures::arm(const CaptureSpec& spec) {
  std::lock_guard lock(mu_);
  if (stop_) return fail(ESHUTDOWN, "eventfs is stopping");
  if (armed_.size() >= kMaxCaptures)
    return fail(ENOSPC, fmt::format("Too many save triggers (the limit is {})", kMaxCaptures));
  const int id = next_id_++;
  auto a = std::make_unique<Armed>();
  a->spec = spec;
  a->event_dir = EventName{spec.system, spec.event}.dir();
  auto opened = Instance::open(root_, fmt::format("{}-save{}", base_, id));
  if (!opened) return opened.error();
  a->instance = std::move(opened).value();
  (void)a->instance->record_owner();
  Instance& in = *a->instance;
  // Small rings that wake their reader at the first record, in a clock the
  // rest of the system can compare with.
  (void)in.set_buffer_kb(64);
  (void)in.write("buffer_percent", "0");
  (void)in.write("trace_clock", "mono");
  (void)in.disable_option("block");
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
    // Named before the write that armed the save returns (ps, top, tests).
    pthread_setname_np(thread_.native_handle(), "eventfs-capture");
  }
  own_threads_.list();  // (the capture thread among them)
  if (Status set = apply_filter(*a); !set)
    return fail(set.code(), fmt::format("the kernel refused the save's condition: {}", std::strerror(set.code())));
  for (int cpu = 0; cpu < in.cpus(); ++cpu) {
    auto ring = open_cpu_ring(RingFiles(in.path()), cpu, ReaderMode::Read);
    if (!ring) return fail(EIO, ring.reason());
    a->rings.push_back(std::move(*ring));
    a->failed.push_back(false);
  }
  if (Status on = in.write(a->event_dir + "/enable", "1"); !on)
    return fail(on.code(),
                fmt::format("cannot enable {}:{} for the save: {}", spec.system, spec.event, std::strerror(on.code())));
  armed_.emplace(id, std::move(a));
  wake();
  return id;
}

void InstanceCaptures::disarm(int id) {
  std::unique_ptr<Armed> gone;
  {
    std::lock_guard lock(mu_);
    auto it = armed_.find(id);
    if (it == armed_.end()) return;
    gone = std::move(it->second);
    armed_.erase(it);
  }
  wake();
  // The thread builds its poll set under mu_ and never keeps a ring across
  // it, so the instance can go now.
}

Status InstanceCaptures::refilter(int id, const std::string& raw_filter) {
  std::lock_guard lock(mu_);
  auto it = armed_.find(id);
  if (it == armed_.end()) return fail(ENOENT, fmt::format("no save {}", id));
  Armed& a = *it->second;
  const std::string was = a.spec.raw_filter;
  a.spec.raw_filter = raw_filter;
  if (Status set = apply_filter(a); !set) {
    a.spec.raw_filter = was;
    return fail(set.code(), fmt::format("the kernel refused the save's new condition: {}", std::strerror(set.code())));
  }
  return {};
}

std::optional<std::uint64_t> InstanceCaptures::remaining(int id) const {
  std::lock_guard lock(mu_);
  auto it = armed_.find(id);
  if (it == armed_.end()) return std::nullopt;
  return it->second->spec.count;
}

void InstanceCaptures::pause_until(std::chrono::steady_clock::time_point until) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  if (left.count() <= 0) return;
  pollfd wake{wake_fd_, POLLIN, 0};
  if (::poll(&wake, 1, static_cast<int>(left.count())) > 0) {
    std::uint64_t n;
    (void)!read(wake_fd_, &n, sizeof n);
  }
}

void InstanceCaptures::run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, std::size_t>> owners;  // (capture id, ring index) per fds[i > 0]
  std::vector<std::pair<std::int64_t, std::uint64_t>> values;
  std::vector<Captured> batch;
  std::vector<std::string> problems;
  const std::function<bool()> stopping = [this] { return stop_.load(); };
  auto last_batch = std::chrono::steady_clock::time_point{};
  while (!stop_) {
    pause_until(last_batch + kBusyBatchInterval);
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    owners.clear();
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, a] : armed_)
        for (std::size_t r = 0; r < a->rings.size(); ++r) {
          if (a->failed[r]) continue;
          fds.push_back({a->rings[r]->poll_fd(), POLLIN, 0});
          owners.emplace_back(id, r);
        }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (stop_) return;
    if (fds[0].revents) {
      std::uint64_t n;
      (void)!read(wake_fd_, &n, sizeof n);
      continue;  // the set may have changed
    }
    last_batch = std::chrono::steady_clock::now();
    batch.clear();
    problems.clear();
    {
      std::lock_guard lock(mu_);
      own_threads_.relist(last_batch);
      follow_own_threads(problems);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto it = armed_.find(owners[i - 1].first);
        if (it == armed_.end()) continue;
        Armed& a = *it->second;
        values.clear();
        FieldSink sink(a.spec, own_threads_, values);
        const std::size_t r = owners[i - 1].second;
        Result<std::size_t> n = a.rings[r]->drain(sink, 256);
        for (std::size_t taken = n ? *n : 0; n && *n == 256 && taken < kMaxRecordsPerRing; taken += *n)
          n = a.rings[r]->drain(sink, 256);
        if (!n || (fds[i].revents & (POLLERR | POLLNVAL))) {
          a.failed[r] = true;
          problems.push_back(fmt::format("save:{} on {}:{}: stopped reading CPU {}: {}", a.spec.variable,
                                         a.spec.system, a.spec.event, r,
                                         n ? "the ring's descriptor failed" : n.reason()));
        }
        for (const auto& [v, ts] : values) {
          if (a.spec.count && *a.spec.count == 0) break;
          auto same = std::find_if(batch.begin(), batch.end(),
                                   [&](const Captured& c) { return c.variable == a.spec.variable; });
          if (same == batch.end())
            batch.push_back({a.spec.variable, v, ts});
          else if (ts >= same->ts)
            *same = {a.spec.variable, v, ts};
          if (a.spec.count && --*a.spec.count == 0) (void)a.instance->write(a.event_dir + "/enable", "0");
        }
      }
      follow_own_threads(problems);  // threads the records named and the last list did not have
    }
    if (problem_)
      for (const auto& why : problems) problem_(why);
    if (batch.empty()) continue;
    sink_(batch, stopping);  // (what comes meanwhile makes the next batch)
  }
}

}  // namespace eventfs
