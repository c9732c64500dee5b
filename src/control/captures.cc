#include "control/captures.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

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
};

namespace {

// Takes the saved field out of each record of the one event enabled.
class FieldSink final : public RingSink {
 public:
  FieldSink(const RawField& f, std::vector<std::pair<std::int64_t, std::uint64_t>>& out) : f_(f), out_(out) {}
  void record(std::uint64_t ts, const std::uint8_t* raw, std::uint32_t len) override {
    if (f_.offset + f_.size > len) return;
    out_.emplace_back(integer_from_bytes(raw + f_.offset, f_.size, f_.is_signed), ts);
  }
  void lost(std::uint64_t, std::uint64_t, bool) override {}

 private:
  const RawField& f_;
  std::vector<std::pair<std::int64_t, std::uint64_t>>& out_;
};

}  // namespace

InstanceCaptures::InstanceCaptures(std::string root, std::string base, CaptureSink sink)
    : root_(std::move(root)), base_(std::move(base)), sink_(std::move(sink)) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { run(); });
}

InstanceCaptures::~InstanceCaptures() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  armed_.clear();  // each instance is removed with it
  if (wake_fd_ >= 0) close(wake_fd_);
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

Result<int> InstanceCaptures::arm(const CaptureSpec& spec) {
  std::lock_guard lock(mu_);
  if (armed_.size() >= kMaxCaptures)
    return fail(ENOSPC, fmt::format("Too many save triggers (the limit is {})", kMaxCaptures));
  const int id = next_id_++;
  auto a = std::make_unique<Armed>();
  a->spec = spec;
  a->event_dir = "events/" + spec.system + "/" + spec.event;
  auto opened = Instance::open(root_, fmt::format("{}-save{}", base_, id));
  if (!opened) return opened.error();
  a->instance = std::move(opened).value();
  (void)a->instance->record_owner();
  Instance& in = *a->instance;
  // Small rings that wake their reader at the first record, in a clock the
  // rest of the system can compare with.
  (void)in.write("buffer_size_kb", "64");
  (void)in.write("buffer_percent", "0");
  (void)in.write("trace_clock", "mono");
  (void)in.disable_option("block");
  if (!spec.raw_filter.empty())
    if (Status set = in.write(a->event_dir + "/filter", spec.raw_filter); !set)
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
  Status set = a.instance->write(a.event_dir + "/filter", raw_filter.empty() ? "0" : raw_filter);
  if (!set)
    return fail(set.code(), fmt::format("the kernel refused the save's new condition: {}", std::strerror(set.code())));
  a.spec.raw_filter = raw_filter;
  return {};
}

std::optional<std::uint64_t> InstanceCaptures::remaining(int id) const {
  std::lock_guard lock(mu_);
  auto it = armed_.find(id);
  if (it == armed_.end()) return std::nullopt;
  return it->second->spec.count;
}

void InstanceCaptures::run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, std::size_t>> owners;  // (capture id, ring index) per fds[i > 0]
  std::vector<std::pair<std::int64_t, std::uint64_t>> values;
  while (true) {
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    owners.clear();
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      for (const auto& [id, a] : armed_)
        for (std::size_t r = 0; r < a->rings.size(); ++r) {
          if (a->failed[r]) continue;
          fds.push_back({a->rings[r]->poll_fd(), POLLIN, 0});
          owners.emplace_back(id, r);
        }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) {
      std::uint64_t n;
      (void)!read(wake_fd_, &n, sizeof n);
      continue;  // the set may have changed
    }
    struct Taken {
      std::string variable;
      std::int64_t value;
      std::uint64_t ts;
    };
    std::vector<Taken> taken;
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto it = armed_.find(owners[i - 1].first);
        if (it == armed_.end()) continue;
        Armed& a = *it->second;
        values.clear();
        FieldSink sink(a.spec.field, values);
        const std::size_t r = owners[i - 1].second;
        Result<std::size_t> n = a.rings[r]->drain(sink, 256);
        while (n && *n == 256) n = a.rings[r]->drain(sink, 256);
        if (!n || (fds[i].revents & (POLLERR | POLLNVAL))) a.failed[r] = true;
        for (const auto& [v, ts] : values) {
          if (a.spec.count && *a.spec.count == 0) break;
          taken.push_back({a.spec.variable, v, ts});
          if (a.spec.count && --*a.spec.count == 0) (void)a.instance->write(a.event_dir + "/enable", "0");
        }
      }
    }
    for (const auto& t : taken) sink_(t.variable, t.value, t.ts);
  }
}

}  // namespace eventfs
