#include "support/recorded_markers.h"

#include <signal.h>

#include <thread>

#include "support/recorder_run.h"
#include "support/stream_reading.h"
#include "support/stream_util.h"

namespace eventfs_it::stream {

MarkerRecording record_markers(MountedEventfs& m, const std::vector<std::string>& format_args,
                               const std::string& out, int cpu, int markers) {
  MarkerRecording r;
  std::vector<std::string> args{"-m", m.path(), "-e", "mark*", "-o", out};
  args.insert(args.end(), format_args.begin(), format_args.end());
  Recorder rec(args);
  if (!wait_until([&] { return rec.Started(); }, 10s)) {
    r.failure = "the recorder did not start: " + rec.Stderr();
    return r;
  }
  MarkerWriteResult w = write_markers(instance_dir(m.instance()) + "/trace_marker", cpu, markers, 10, 500us);
  r.tid = w.tid;
  if (!w.error.empty() || w.written != markers) {
    r.failure = "markers written: " + std::to_string(w.written) + " " + w.error;
    return r;
  }
  std::this_thread::sleep_for(300ms);
  r.status = rec.Stop(SIGTERM);
  r.err = rec.Stderr();
  return r;
}

MarkerRecording record_marker_storm(MountedEventfs& m, const std::vector<std::string>& format_args,
                                    const std::string& out, int cpu, int markers) {
  MarkerRecording r;
  const std::string inst = instance_dir(m.instance());
  const std::string stats = m / ("per_cpu/cpu" + std::to_string(cpu) + "/stats");
  std::vector<std::string> args{"-m", m.path(), "-e", "marker", "-o", out};
  args.insert(args.end(), format_args.begin(), format_args.end());
  Recorder rec(args);
  if (!wait_until([&] { return rec.Started(); }, 10s)) {
    r.failure = "the recorder did not start: " + rec.Stderr();
    return r;
  }
  const long long dropped_before = stat_value(slurp(stats), "dropped by eventfs");
  const long long lost_before = stat_value(slurp(stats), "lost events");
  ::kill(rec.pid(), SIGSTOP);
  MarkerWriteResult w = write_markers(inst + "/trace_marker", cpu, markers);
  ::kill(rec.pid(), SIGCONT);
  r.tid = w.tid;
  if (w.written != markers) {
    r.failure = "markers written: " + std::to_string(w.written) + " " + w.error;
    return r;
  }
  // Once eventfs has read the kernel's ring: its counts of this CPU's loss.
  const std::string kstats = inst + "/per_cpu/cpu" + std::to_string(cpu) + "/stats";
  if (!wait_until([&] { return stat_value(slurp(kstats), "entries") == 0; }, 10s)) {
    r.failure = "eventfs did not read the kernel's ring: " + slurp(kstats);
    return r;
  }
  std::this_thread::sleep_for(300ms);
  r.lost = stat_value(slurp(stats), "dropped by eventfs") - dropped_before + stat_value(slurp(stats), "lost events") -
           lost_before;
  r.status = rec.Stop(SIGINT);
  r.err = rec.Stderr();
  return r;
}

}  // namespace eventfs_it::stream
