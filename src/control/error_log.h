// error_log: why the last writes were refused, in tracefs's own layout:
//
//   [  872.414136] sched_switch/trigger: error: Unknown command 'foo'
//     Command: foo:1
//              ^
//
// and what failed with no write to blame (the streams' ring buffers could
// not be read), as the first line alone.
#pragma once

#include <deque>
#include <mutex>
#include <string>

namespace eventfs {

class ErrorLog {
 public:
  static constexpr std::size_t kMaxEntries = 16;  // as the kernel keeps

  void add(const std::string& location, const std::string& message, const std::string& command,
           std::size_t caret);
  // An error no write caused: no Command line, no caret.
  void add_failure(const std::string& location, const std::string& message);
  std::string text() const;
  void clear();

  // Parses the newest entry of a kernel error_log: message and caret offset
  // into its command. False if the log is empty.
  static bool parse_last(const std::string& kernel_log, std::string& message, std::string& command,
                         std::size_t& caret);

 private:
  void push(std::string entry);
  static std::string head(const std::string& location, const std::string& message);  // "[time] location: error: message\n"

  mutable std::mutex mu_;
  std::deque<std::string> entries_;
};

}  // namespace eventfs
