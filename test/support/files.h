// Integration-test helpers: the paths the tests use, and files read the way cat reads them.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace eventfs_it {

// Every temporary directory of these tests starts with this, so a later run
// can find and remove what a crashed run left behind.
inline constexpr const char* kTempPrefix = "/tmp/eventfs-it-";
inline constexpr const char* kBinary = EVENTFS_BINARY;
inline constexpr const char* kFixturesDir = EVENTFS_FIXTURES_DIR;
inline constexpr const char* kSourceDir = EVENTFS_SOURCE_DIR;
inline constexpr const char* kLiveTracefs = "/sys/kernel/tracing";

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string fixture(const std::string& name);

const std::vector<std::string>& fixture_names();

// ---------------------------------------------------------------------------
// Files, the way cat reads them.

// Reads the whole file with open/read/close; 0 or the errno of the failing call.
int read_file(const std::string& path, std::string& out);

// The file's text, or a marker that makes any comparison fail loudly.
std::string slurp(const std::string& path);

bool write_text_file(const std::string& path, const std::string& text);

// `s` on one line for a failure message: newlines and control bytes
// escaped, cut after 200 bytes.
std::string printable(std::string_view s);

bool exists(const std::string& path);

// Names in a directory (no . and ..), sorted; directories only if asked.
std::vector<std::string> list_dir(const std::string& path, bool dirs_only = false);

std::vector<std::string> split_lines(const std::string& text);

std::string join(const std::vector<std::string>& v, const std::string& sep = "\n");

// The first `n` lines of a text, for failure messages that stay readable.
std::string head_lines(const std::string& text, std::size_t n = 20);

// Every tracefs event that has a format file: "system/event", sorted.
std::vector<std::string> tracefs_events(const std::string& tracefs_root);

}  // namespace eventfs_it
