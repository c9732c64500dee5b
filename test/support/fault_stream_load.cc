// The stream load of the fault tests: marker writers, stream readers, and the
#include "support/fault_stream_load.h"

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

}  // namespace eventfs_it::fault
