// eventfs's own tracefs instance: every write eventfs makes goes here, never
// to the top-level instance. Its files are read, written and cleared, its
// events and triggers cleared and the instance removed through libtracefs;
// the ownership record and the reclaiming of a dead daemon's instance are
// eventfs's own.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error/result.h"

struct tracefs_instance;

namespace eventfs {

// Reads and writes of files inside an instance, by path relative to it
// ("events/sched/sched_switch/trigger"). Each write is one write(2), as the
// kernel parses control files per write. A failure's code is the errno the
// kernel gave (ENOENT: no such file).
class InstanceFiles {
 public:
  virtual ~InstanceFiles() = default;
  virtual Result<std::string> read(const std::string& rel) const = 0;
  virtual Status write(const std::string& rel, std::string_view data) const = 0;
  // Opens with O_TRUNC and writes nothing (clears error_log).
  virtual Status truncate(const std::string& rel) const = 0;
  virtual const std::string& path() const = 0;
};

class Instance final : public InstanceFiles {
 public:
  // Creates instances/<name> under the tracefs at `root`, or reclaims one that
  // an eventfs daemon which is no longer running left behind. Refuses (with a
  // one-line reason) an instance that another program made (EEXIST) or that
  // a live eventfs daemon owns (EBUSY).
  static Result<std::unique_ptr<Instance>> open(const std::string& root, const std::string& name);
  ~Instance() override;

  Result<std::string> read(const std::string& rel) const override;
  Status write(const std::string& rel, std::string_view data) const override;
  Status truncate(const std::string& rel) const override;
  const std::string& path() const override { return path_; }

  // Removes every trigger (the kernel needs that before the events can go),
  // disables every event and removes the instance and its ownership record.
  // While a process holds one of its files the kernel keeps the instance:
  // removal waits a few seconds for it, then says so on stderr, keeps the
  // ownership record (the next daemon of that name reclaims the instance) and
  // fails with the errno. Idempotent; also run by the destructor.
  Status remove();

  // CPUs with a ring in the instance (per_cpu/cpuN).
  int cpus() const;
  // The instance's options/<option> set to 0 ("block", say).
  Status disable_option(const std::string& option) const;
  // Its sub-buffers' size (buffer_subbuf_size_kb, Linux >= 6.8).
  Status set_subbuf_kb(unsigned kb) const;
  // Its rings' size per CPU (buffer_size_kb), leaving the top level's as the
  // kernel's first use of tracing leaves them (see instance.cc).
  Status set_buffer_kb(unsigned kb) const;

  // Records this process as the owner (again: after the daemon goes to the
  // background, in a new process).
  Status record_owner();

  // Where the ownership records of instances live.
  static std::string owner_record(const std::string& name);
  // The instances under the tracefs at `root` whose names begin with `prefix`.
  static std::vector<std::string> names_starting(const std::string& root, const std::string& prefix);

 private:
  Instance(std::string root, std::string name);
  // "PATH/REL: strerror(err)", with `otherwise` when libtracefs left errno 0.
  Error failed(const std::string& rel, int err, int otherwise) const;
  std::string root_, name_, path_;
  tracefs_instance* handle_;  // libtracefs's handle of the instance (freed with it)
  bool owned_ = false;  // created by this process: only then is it removed
};


// Whether `path` is on a tracefs (statfs magic), as opposed to a plain copy.
bool is_tracefs(const std::string& path);
// Whether `fd` is a file of a tracefs: only tracefs's pipes speak the ring
// protocols (mmap, GET_READER), a plain copy of the tree does not.
bool is_tracefs_fd(int fd);

// N when buffer_size_kb's text is the kernel's "S (expanded: N)" (the
// rings are at their boot size S until the first use of tracing).
std::optional<unsigned long> unexpanded_size_kb(std::string_view buffer_size_kb);

}  // namespace eventfs
