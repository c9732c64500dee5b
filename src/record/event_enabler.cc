#include "record/event_enabler.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tracefs/file_io.h"

namespace eventfs::record {
namespace {

// A small file's text without its trailing newline and blanks.
Result<std::string> read_small(const std::string& path) {
  auto text = read_whole_file(path);
  if (text)
    while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return text;
}

// The last line of <mount>/error_log, which says why eventfs refused a write.
std::string last_error_line(const std::string& mount) {
  auto text = read_whole_file(mount + "/error_log");
  if (!text) return "";
  std::string all = std::move(text).value();
  while (!all.empty() && all.back() == '\n') all.pop_back();
  auto nl = all.rfind('\n');
  return nl == std::string::npos ? all : all.substr(nl + 1);
}

}  // namespace

Status EventEnabler::enable(const std::vector<std::string>& events) {
  for (const auto& e : events) {
    if (Status on = enable_one(e); !on) {
      (void)restore();
      return on;
    }
  }
  return {};
}

Status EventEnabler::enable_one(const std::string& event) {
  const std::string path = mount_ + "/" + event + "/enable";
  auto read = read_small(path);
  if (!read) return fail(read.code(), fmt::format("cannot read {}: {}", path, std::strerror(read.code())));
  // "1", or "1*"/"0*" when a trigger arms the event: only the digit is
  // the enable state, and only it can be written back.
  std::string before = read->substr(0, 1);
  if (before == "1") return {};
  if (Status on = write_once(path, "1", O_TRUNC); !on) {
    std::string msg = fmt::format("cannot enable {}: {}", event, std::strerror(on.code()));
    if (auto why = last_error_line(mount_); !why.empty()) msg += " (error_log: " + why + ")";
    return fail(on.code(), msg);
  }
  saved_.emplace_back(path, before);
  return {};
}

Status EventEnabler::restore() {
  Status first;
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
    if (Status back = write_once(it->first, it->second, O_TRUNC); !back && first)
      first = fail(back.code(), fmt::format("cannot restore {}: {}", it->first, std::strerror(back.code())));
  saved_.clear();
  return first;
}

}  // namespace eventfs::record
