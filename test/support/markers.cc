// trace_marker writes and the marker catalog.
#include "support/markers.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace eventfs_it::stream {

std::string marker_text(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "m-%06d", i);
  return buf;
}

int marker_number(const std::string& s) {
  if (s.size() != 8 || s.compare(0, 2, "m-") != 0) return -1;
  for (std::size_t i = 2; i < 8; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  return std::stoi(s.substr(2));
}

MarkerWriteResult write_markers(const std::string& trace_marker, int cpu, int n, int burst,
                                std::chrono::microseconds pause) {
  MarkerWriteResult res;
  std::thread t([&] {
    if (!pin_current_thread(cpu)) {
      res.error = "cannot pin to CPU " + std::to_string(cpu);
      return;
    }
    res.tid = current_tid();
    int fd = ::open(trace_marker.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      res.error = "open " + trace_marker + ": " + std::strerror(errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      std::string m = marker_text(i);
      if (::write(fd, m.data(), m.size()) != static_cast<ssize_t>(m.size())) {
        res.error = "write " + trace_marker + ": " + std::strerror(errno);
        break;
      }
      ++res.written;
      if (burst > 0 && (i + 1) % burst == 0) std::this_thread::sleep_for(pause);
    }
    ::close(fd);
  });
  t.join();
  return res;
}

std::string write_marker_catalog(const TempDir& dir) {
  std::string text = slurp(std::string(kSourceDir) + "/src/catalog/default.catalog");
  std::string path = dir / "with-marker.catalog";
  if (text.rfind("<read", 0) == 0 || !write_text_file(path, text + kMarkerEvent)) return "";
  return path;
}

std::vector<std::string> marker_mount_args(const TempDir& dir, const std::vector<std::string>& extra) {
  std::string catalog = write_marker_catalog(dir);
  std::vector<std::string> args{"-o", "catalog=" + (catalog.empty() ? dir / "unwritten.catalog" : catalog)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

MarkerMount::MarkerMount(const std::vector<std::string>& extra) : m(marker_mount_args(dir, extra)) {}

}  // namespace eventfs_it::stream
