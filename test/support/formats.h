// The format language and the default catalog, read independently of the daemon.
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
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/stale_runs.h"

namespace eventfs_it {

// ---------------------------------------------------------------------------
// The format language.

// One line of a format in the eventfs language.
struct FormatLine {
  std::string kind;  // field, array, dynarray
  std::string name;
  std::string type;
  unsigned bits = 0;
  unsigned count = 0;  // arrays
  std::string loc;     // dynarrays
  unsigned align = 0;
  int is_signed = -1;
};

const std::regex& format_line_regex();

// Parses a whole format; lines that are not in the language go to `bad`.
std::vector<FormatLine> parse_format(const std::string& text, std::vector<std::string>* bad = nullptr);

// One field of a tracefs format file.
struct TracefsField {
  std::string decl;  // "char prev_comm[16]", "__data_loc char[] name"
  std::string name;
  unsigned offset = 0, size = 0;
  int is_signed = 0;
  bool common = false;
};

std::vector<TracefsField> parse_tracefs_format(const std::string& text);

// ---------------------------------------------------------------------------
// A types/<name> file: `key = value;` lines, and for an enumeration its
// `map = { { V, "NAME" }, ... };` and `fields = { event.field, ... };`.

struct NamedType {
  std::map<std::string, std::string> keys;  // parent, size, signed, align
  std::vector<std::pair<long long, std::string>> map;
  std::vector<std::string> fields;          // "event.field"
};

// Lines it does not understand go to `bad`.
NamedType parse_named_type(const std::string& text, std::vector<std::string>* bad = nullptr);

// The { value, "name" } pairs of the first __print_symbolic(REC->field, ...)
// of a tracefs format's print fmt, values that are numbers only.
std::vector<std::pair<long long, std::string>> print_symbolic_table(const std::string& format,
                                                                    const std::string& field);

// ---------------------------------------------------------------------------
// The default catalog, read independently of the daemon's parser.

struct CatalogEntry {
  std::string name;
  std::vector<std::string> sources;  // "system/event"
  unsigned id = 0;
};

std::vector<CatalogEntry> default_catalog();

// The stable events a tracefs tree should offer: those whose raw event exists.
std::set<std::string> expected_available(const std::vector<CatalogEntry>& cat, const std::string& tracefs_root);

// ---------------------------------------------------------------------------
// The RFC's golden formats.

inline constexpr const char* kGoldenSchedSwitch =
    "\tarray:prev_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:prev_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:prev_state\ttype:char\tsize:8\talign:1\tsigned:1;\n"
    "\tarray:next_comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:next_pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n";

inline constexpr const char* kGoldenSchedMigrateTask =
    "\tarray:comm\ttype:char\tsize:8\tcount:16\talign:1\tsigned:1;\n"
    "\tfield:pid\ttype:pid_t\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:orig_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n"
    "\tfield:dest_cpu\ttype:int\tsize:32\talign:4\tsigned:1;\n";

}  // namespace eventfs_it
