#include "record/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace eventfs::record {
namespace {

// The value of an option given as "-x VALUE" or "-xVALUE".
std::string take_value(int argc, char** argv, int& i, const char* flag) {
  const char* a = argv[i];
  if (a[2] != '\0') return a + 2;
  if (i + 1 >= argc) throw UsageError{std::string("option ") + flag + " needs a value"};
  return argv[++i];
}

double parse_seconds(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v <= 0)
    throw UsageError{"-t needs a positive number of seconds, not '" + s + "'"};
  return v;
}

}  // namespace

const char* usage_text() {
  return "usage: eventfs-record [-m MOUNT] -e EVENT... [-o DIR] [-t SECONDS | -- COMMAND [ARGS]]\n"
         "  -m MOUNT    the eventfs mount (default: /sys/kernel/events if eventfs\n"
         "              is mounted there, else the one eventfs mount there is)\n"
         "  -e EVENT    a stable event or a glob ('sched_*'); repeat for more\n"
         "  -o DIR      the CTF trace directory to write (new or empty;\n"
         "              default ./eventfs-record-YYYYMMDD-HHMMSS)\n"
         "  -t SECONDS  record for this long (default: until Ctrl-C, or until COMMAND ends)\n"
         "  -h, --help  this help;  -V, --version  the version\n"
         "See eventfs-record(1).\n";
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool mount_given = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (a == "-V" || a == "--version") {
      o.version = true;
      return o;
    }
    if (a.size() < 2 || a[0] != '-') throw UsageError{"unexpected argument '" + a + "' (a command goes after --)"};
    switch (a[1]) {
      case 'm':
        o.mount = take_value(argc, argv, i, "-m");
        mount_given = true;
        break;
      case 'e': o.events.push_back(take_value(argc, argv, i, "-e")); break;
      case 'o': o.out_dir = take_value(argc, argv, i, "-o"); break;
      case 't': o.seconds = parse_seconds(take_value(argc, argv, i, "-t")); break;
      default: throw UsageError{"unknown option '" + a + "'"};
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.events.empty()) throw UsageError{"no event given (-e EVENT)"};
  if (o.seconds && !o.command.empty()) throw UsageError{"-t and a command exclude each other"};
  if (mount_given && o.mount.empty()) throw UsageError{"-m needs a directory"};
  for (const auto& e : o.events)
    if (e.empty()) throw UsageError{"-e needs an event name"};
  return o;
}

}  // namespace eventfs::record
