// The merged text stream (trace_pipe): takes the records of every CPU's
// queue in time order and renders them as tracefs's trace_pipe does, with
// the task names of the kernel's saved_cmdlines and trace_pipe's marks of
// lost events. What it takes is gone for the other readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "projection/binding.h"
#include "projection/text_render.h"
#include "stream/comm_cache.h"
#include "stream/hub_cpu.h"
#include "stream/hub_services.h"

namespace eventfs {

class TextMerge {
 public:
  // Task names come from `hub`'s saved_cmdlines().
  TextMerge(HubCpus& cpus, const Resolution& resolution, HubServices& hub);

  // Appends at most about `max` bytes of text to `out` (a whole line at
  // least); false if there was nothing. Holds every CPU's mu meanwhile
  // (not while it reads saved_cmdlines for a task it had no name for).
  bool take(std::size_t max, std::string& out);

 private:
  int oldest_head();  // the CPU whose head is oldest, or -1
  void render_head(int cpu, std::string& out);
  void render_gap(int cpu, std::string& out);  // the CPU's gap before its front, if any
  // Puts the names the table has now in the lines of `unsure_`.
  void mend(std::string& out);

  HubCpus& cpus_;
  CommCache comms_;  // the task names
  // Lines this take rendered with "<...>" or a name from the table: where
  // the line starts, the pid, and the length of the name there.
  struct Unsure {
    std::size_t at;
    std::int32_t pid;
    std::size_t len;
  };
  std::vector<Unsure> unsure_;
  std::unordered_map<std::uint32_t, TextFormat> text_;  // by stable id
};

}  // namespace eventfs
