// The table of refused control writes (see refused_writes.h).
#include "support/refused_writes.h"

#include <cerrno>

namespace eventfs::testing {
namespace {

// A stable filter that fits in a page but whose kernel translation does not
// (each task state letter becomes a bit test).
std::string filter_longer_than_a_page_in_kernel_names() {
  std::string f = "prev_state == 'D'";
  for (int i = 0; i < 100; ++i) f += " || prev_state == 'D'";
  return f + "\n";
}

}  // namespace

std::vector<RefusedWrite> refused_writes() {
  return {
      {"unknown command", "sched_switch/trigger", "frobnicate\n", EINVAL, "Unknown command 'frobnicate'"},
      {"misspelt command", "sched_switch/trigger", "enable_evnt:sched_migrate_task\n", EINVAL, "Unknown command"},
      {"unknown target", "sched_switch/trigger", "enable_event:no_such_event\n", EINVAL, "Unknown event 'no_such_event'"},
      {"raw target on a stable file", "sched_switch/trigger", "enable_event:sched:sched_wakeup\n", EINVAL,
       "Stable triggers name stable events"},
      {"missing target", "sched_switch/trigger", "enable_event\n", EINVAL, "Missing target event"},
      {"empty target", "sched_switch/trigger", "disable_event:\n", EINVAL, "Missing target event"},
      {"unknown field", "sched_switch/trigger", "traceoff if no_such_field == 1\n", EINVAL, "Field not found"},
      {"field of another event", "sched_switch/trigger", "traceoff if orig_cpu == 1\n", EINVAL, "Field not found"},
      {"raw-only field in a stable filter", "sched_switch/filter", "prev_prio == 1\n", EINVAL, "Field not found"},
      {"bad count", "sched_switch/trigger", "traceoff:abc\n", EINVAL, "Invalid count"},
      {"negative count", "sched_switch/trigger", "traceoff:-1\n", EINVAL, "Invalid count"},
      {"count then junk", "sched_switch/trigger", "traceoff:5:6\n", EINVAL, "too many ':'"},
      {"empty line (echo '')", "sched_switch/trigger", "\n", EINVAL, "Empty command"},
      {"whitespace only", "sched_switch/trigger", "   \t \n", EINVAL, "Empty command"},
      {"a page of junk", "sched_switch/trigger", std::string(4096, 'x'), EINVAL, "Command too long"},
      {"binary bytes", "sched_switch/trigger", std::string("trace\x01on\n", 9), EINVAL, "Invalid character"},
      {"NUL byte", "sched_switch/trigger", std::string("traceon\0x\n", 10), EINVAL, "Invalid character"},
      {"two commands of one kind (traceon and traceoff)", "sched_switch/trigger", "traceon\ntraceoff\n", EEXIST,
       "File exists: 'traceon' is set already"},
      {"a good command and a bad one", "sched_switch/trigger", "traceoff enable_event:no_such_event\n", EINVAL,
       "Unknown event 'no_such_event'"},
      {"a good command and a bad filter", "sched_switch/trigger", "stacktrace:2 traceon if no_such_field == 1\n",
       EINVAL, "Field not found"},
      {"trailing if", "sched_switch/trigger", "traceoff if\n", EINVAL, "Missing filter after 'if'"},
      {"if with blanks only", "sched_switch/trigger", "traceoff if   \n", EINVAL, "Missing filter after 'if'"},
      {"junk before if", "sched_switch/trigger", "traceoff now if prev_pid == 1\n", EINVAL, "unexpected text"},
      {"glob matching nothing", "sched_switch/trigger", "enable_event:zzz_*\n", EINVAL, "No stable event matches 'zzz_*'"},
      {"unsupported command (snapshot)", "sched_switch/trigger", "snapshot\n", EINVAL, "'snapshot' is not available"},
      {"unsupported command (hist)", "sched_switch/trigger", "hist:keys=prev_pid\n", EINVAL, "'hist' is not available"},
      {"unbalanced parens", "sched_switch/trigger", "traceoff if (prev_pid == 1\n", EINVAL, "Unbalanced parens"},
      {"parens nested past the limit", "sched_switch/filter",
       std::string(257, '(') + "prev_pid == 1" + std::string(257, ')') + "\n", EINVAL, "Too deeply nested"},
      {"missing value", "sched_switch/trigger", "traceoff if prev_pid ==\n", EINVAL, "Missing field name and/or value"},
      {"bad operator", "sched_switch/trigger", "traceoff if prev_pid = 1\n", EINVAL, "Invalid operator"},
      {"task state ordering", "sched_switch/filter", "prev_state < 'S'\n", EINVAL, "Illegal operation for field type"},
      {"unknown task state", "sched_switch/filter", "prev_state == 'Q'\n", EINVAL, "Invalid task state 'Q'"},
      {"unterminated string", "sched_switch/filter", "prev_comm == \"bash\n", EINVAL, "Missing closing quote"},
      {"empty filter", "sched_switch/filter", "\n", EINVAL, "Meaningless filter expression"},
      {"filter past a page in the kernel's names", "sched_switch/filter", filter_longer_than_a_page_in_kernel_names(),
       EINVAL, "Filter too long in the kernel's names"},
      {"enable 2", "sched_switch/enable", "2\n", EINVAL, "Invalid value"},
      {"enable word", "sched_switch/enable", "on\n", EINVAL, "Invalid value"},
      {"raw glob matching nothing", "raw/sched/sched_switch/trigger", "enable_event:nosys_*:*\n", EINVAL,
       "No event matches 'nosys_*:*'"},
      {"raw unknown target", "raw/sched/sched_switch/trigger", "enable_event:sched:nosuch\n", EINVAL,
       "Unknown event 'sched:nosuch'"},
      {"raw target without system", "raw/sched/sched_switch/trigger", "enable_event:sched_wakeup\n", EINVAL,
       "Missing target event"},
  };
}

}  // namespace eventfs::testing
