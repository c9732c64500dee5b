// The names of the tasks a recording saw, for a trace.dat's saved cmdlines
// (so that readers name each record's task): taken from the events' own
// fields, a text field `comm` with the field `pid` (or, without one, the
// record's pid), and `X_comm` with `X_pid` (prev_, next_, parent_, child_).
// The last name seen for a pid wins.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "recorder/mount_layout.h"

namespace eventfs::recorder {

class TaskNames {
 public:
  explicit TaskNames(const MountLayout& layout);

  // Notes the names an event of stable id `id` carries; `payload` holds
  // `size` bytes.
  void note(std::uint32_t id, std::int32_t pid, const unsigned char* payload, std::size_t size);
  // Adds what `other` saw (its names win).
  void merge(const TaskNames& other);
  // "pid comm\n" lines, in pid order.
  std::string cmdlines() const;
  std::size_t size() const { return names_.size(); }

 private:
  struct Pair {
    unsigned comm = 0, comm_len = 0;
    int pid = -1;  // offset of the pid field (4 bytes); -1: the record's pid
  };
  std::unordered_map<std::uint32_t, std::vector<Pair>> pairs_;
  std::unordered_map<std::int32_t, std::string> names_;
};

}  // namespace eventfs::recorder
