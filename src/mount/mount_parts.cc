#include "mount/mount_parts.h"

#include <utility>

#include "mount/mount_tree.h"

namespace eventfs {

MountParts::MountParts(Catalog catalog, const MountConfig& config)
    : config_(config),
      catalog_(std::move(catalog)),
      tracefs_(open_tracefs_dir(config.tracefs_root)),
      raw_events_(*tracefs_),
      resolution_(resolve_catalog(catalog_, [this](const RawEventName& n) { return raw_events_.get(n); })),
      wanted_(resolution_.available.size()) {}

MountParts::~MountParts() = default;

Result<std::unique_ptr<MountParts>> MountParts::build(Catalog catalog, const MountConfig& config) {
  std::unique_ptr<MountParts> parts(new MountParts(std::move(catalog), config));
  // Control files write to eventfs's own instance, which only a real tracefs has.
  if (is_tracefs(config.tracefs_root))
    if (Status opened = parts->open_instance(); !opened) return std::move(opened).error();
  parts->tree_.set_owner(0, config.group);
  parts->streams_ = build_mount_tree(parts->tree_, *parts->tracefs_, parts->resolution_,
                                     {parts->controller_.get(), parts->hub_.get()});
  return parts;
}

Status MountParts::open_instance() {
  auto opened = Instance::open(config_.tracefs_root, config_.instance_name);
  if (!opened) return std::move(opened).error();
  instance_ = std::move(opened).value();
  InstanceCaptures::remove_stale(config_.tracefs_root, config_.instance_name);
  // Larger sub-buffers than the kernel's one page (Linux >= 6.8; older
  // kernels have no such file): the ring thread takes whole sub-buffers,
  // so the larger they are, the fewer read(2)s or GET_READERs per event.
  // Where the kernel refuses the size, the rings keep the kernel's
  // sub-buffers, as on kernels before 6.8 (eventfs(8), KERNELS).
  (void)instance_->set_subbuf_kb(StreamHub::kSubbufKb);
  // A new instance takes the top level's options: with "block" set there,
  // the kernel polls every trace_pipe_raw (and trace_pipe) of the instance
  // readable at all times, and the ring readers of an open stream with
  // nothing to read would spin.
  (void)instance_->disable_option("block");
  controller_ = std::make_unique<Controller>(*instance_, *tracefs_, resolution_, &wanted_);
  hub_ = std::make_unique<StreamHub>(RingFiles(instance_->path()), instance_->cpus(), resolution_,
                                     config_.reader_mode, config_.queue_bytes, &wanted_);
  hub_->set_drainer_nice(config_.drainer_nice);
  if (config_.drainer_fifo) hub_->set_drainer_fifo(*config_.drainer_fifo);
  // After daemonizing stderr is gone: error_log says why the streams fail.
  hub_->on_ring_error([log = &controller_->error_log()](const std::string& why) { log->add_failure("trace_pipe", why); });
  return {};
}

void MountParts::start() {
  if (instance_) (void)instance_->record_owner();  // the daemon's pid, not the parent's
  if (hub_) hub_->start();
  if (controller_) {
    captures_ = std::make_unique<InstanceCaptures>(
        config_.tracefs_root, config_.instance_name,
        [c = controller_.get()](const std::vector<Captured>& batch, const std::function<bool()>& stopping) {
          c->captured(batch, stopping);
        },
        [log = &controller_->error_log()](const std::string& why) { log->add_failure("trigger", why); });
    controller_->set_captures(captures_.get());
  }
}

void MountParts::end_streams() {
  if (captures_) captures_->request_stop();  // no more rewrites for a mount that is going
  for (auto& f : streams_) f->end();
}

void MountParts::stop() {
  if (captures_) captures_->stop();  // within the kernel write under way
  if (hub_) hub_->stop();  // the rings close before the instance goes
  if (controller_) controller_->set_captures(nullptr);
  captures_.reset();  // the capture instances go
}

Status MountParts::remove_instance() { return instance_ ? instance_->remove() : Status{}; }

}  // namespace eventfs
