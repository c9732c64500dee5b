#include "format/record_header_text.h"

#include <cstddef>

#include <fmt/format.h>

#include "eventfs/record.h"
#include "format/format_text.h"
#include "format/type_model.h"

namespace eventfs {
namespace {

FormatField field(const char* name, const char* type) {
  FormatField f;
  f.name = name;
  f.type = *stable_type(type);
  return f;
}

}  // namespace

std::vector<FormatField> record_header_fields() {
  return {field("size", "u32"), field("id", "u32"), field("timestamp", "u64"), field("pid", "pid_t"),
          field("version", "u16"), field("reserved", "u16")};
}

std::vector<FormatField> lost_record_fields() {
  return {field("count", "u64"), field("cpu", "u32"), field("flags", "u32")};
}

std::string record_header_text() {
  // The layouts below are record.h's; the static_asserts keep them so.
  static_assert(sizeof(eventfs_record_header) == 24 && offsetof(eventfs_record_header, pid) == 16 &&
                offsetof(eventfs_record_header, version) == 20);
  static_assert(sizeof(eventfs_lost) == 16 && offsetof(eventfs_lost, cpu) == 8);
  std::string out = fmt::format(
      "# The binary record framing of per_cpu/cpuN/trace_pipe_raw, version {}.\n"
      "# A record is this header, its payload at the next multiple of {} bytes\n"
      "# (the payload's fields laid out as <event>/format implies), and zero\n"
      "# padding up to size, a multiple of {}. id is the event's <event>/id;\n"
      "# id {} is a lost-events record, whose payload is 'lost' below.\n"
      "header:\n",
      EVENTFS_RECORD_VERSION, EVENTFS_RECORD_ALIGN, EVENTFS_RECORD_ALIGN, EVENTFS_ID_LOST);
  out += render_format(record_header_fields());
  out += fmt::format("lost:\n");
  out += render_format(lost_record_fields());
  out += fmt::format("# flags: {} = the kernel did not store the count; count is an estimate.\n",
                     EVENTFS_LOST_COUNT_UNKNOWN);
  return out;
}

}  // namespace eventfs
