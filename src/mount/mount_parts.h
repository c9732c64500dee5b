// What one mount is made of, wired together: the tracefs seam, the catalog
// resolved against the kernel's raw events, eventfs's own instance with its
// controller, stream hub and captures (only over a real tracefs), and the
// node tree with its stream files. main() parses the options and runs the
// FUSE session; everything between the two is built and taken down here.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "control/captures.h"
#include "control/controller.h"
#include "error/result.h"
#include "fs/node_tree.h"
#include "fs/stream_file.h"
#include "projection/binding.h"
#include "projection/wanted_events.h"
#include "ring/ring.h"
#include "stream/stream_hub.h"
#include "tracefs/instance.h"
#include "tracefs/raw_event_cache.h"
#include "tracefs/tracefs.h"

namespace eventfs {

struct MountConfig {
  std::string tracefs_root;  // a tracefs, or a plain directory of format files
  std::string instance_name = "eventfs";
  ReaderMode reader_mode = ReaderMode::Auto;
  std::size_t queue_bytes = 0;
  int drainer_nice = 0;
  std::optional<int> drainer_fifo;
  gid_t group = 0;  // the group that owns the mount's files
};

class MountParts {
 public:
  // Builds everything that does not need the daemon's own process: over a
  // tracefs, opens (or takes over) the instance and makes the controller
  // and hub, whose threads start later. Why not, in one line.
  static Result<std::unique_ptr<MountParts>> build(Catalog catalog, const MountConfig& config);
  ~MountParts();
  MountParts(const MountParts&) = delete;
  MountParts& operator=(const MountParts&) = delete;

  NodeTree& tree() { return tree_; }

  // In the daemon, after it has gone to the background: the instance's
  // owner record names this process; the hub's threads and the captures'
  // thread start.
  void start();
  // Readers waiting and reading get end of file.
  void end_streams();
  // The threads end and the rings close; the controller forgets the
  // captures, whose instances go.
  void stop();
  // Triggers, then events, then the instance; why it had to be left behind.
  // Once the session has freed its files.
  Status remove_instance();

 private:
  MountParts(Catalog catalog, const MountConfig& config);
  Status open_instance();

  MountConfig config_;
  Catalog catalog_;
  std::unique_ptr<Tracefs> tracefs_;
  RawEventCache raw_events_;
  Resolution resolution_;
  std::unique_ptr<Instance> instance_;
  WantedEvents wanted_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<StreamHub> hub_;
  std::unique_ptr<InstanceCaptures> captures_;
  NodeTree tree_;
  std::vector<std::shared_ptr<StreamFile>> streams_;
};

}  // namespace eventfs
