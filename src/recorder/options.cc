#include "recorder/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace eventfs::recorder {
namespace {

using UsageStatus = Result<void, UsageError>;

// The value of an option given as "-x VALUE" or "-xVALUE".
Result<std::string, UsageError> take_value(int argc, char** argv, int& i, const std::string& flag) {
  const char* a = argv[i];
  if (a[2] != '\0') return std::string(a + 2);
  if (i + 1 >= argc) return UsageError{"option " + flag + " needs a value"};
  return std::string(argv[++i]);
}

Result<double, UsageError> parse_seconds(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v <= 0)
    return UsageError{"-t needs a positive number of seconds, not '" + s + "'"};
  return v;
}

Result<int, UsageError> parse_nice(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < -20 || v > 19)
    return UsageError{"-n needs a nice value from -20 to 19, not '" + s + "'"};
  return static_cast<int>(v);
}

Result<OutputFormat, UsageError> parse_format(const std::string& s) {
  if (s == "ctf") return OutputFormat::kCtf;
  if (s == "trace.dat") return OutputFormat::kTraceDat;
  return UsageError{"-F needs ctf or trace.dat, not '" + s + "'"};
}

// The option at argv[i] (and its value, which i is moved past) into `o`;
// `mount_given` says whether -m was seen, as its value may be empty.
UsageStatus take_option(int argc, char** argv, int& i, Options& o, bool& mount_given) {
  const std::string a = argv[i];
  if (a.size() < 2 || a[0] != '-') return UsageError{"unexpected argument '" + a + "' (a command goes after --)"};
  if (std::strchr("meotnF", a[1]) == nullptr) return UsageError{"unknown option '" + a + "'"};
  auto value = take_value(argc, argv, i, a.substr(0, 2));
  if (!value) return std::move(value).error();
  switch (a[1]) {
    case 'm':
      o.mount = std::move(value).value();
      mount_given = true;
      break;
    case 'e': o.events.push_back(std::move(value).value()); break;
    case 'o': o.out_dir = std::move(value).value(); break;
    case 'F': {
      auto format = parse_format(*value);
      if (!format) return std::move(format).error();
      o.format = *format;
      break;
    }
    case 'n': {
      auto nice = parse_nice(*value);
      if (!nice) return std::move(nice).error();
      o.nice = *nice;
      break;
    }
    default: {
      auto seconds = parse_seconds(*value);
      if (!seconds) return std::move(seconds).error();
      o.seconds = *seconds;
    }
  }
  return {};
}

// What the options say together.
UsageStatus check(const Options& o, bool mount_given) {
  if (o.events.empty()) return UsageError{"no event given (-e EVENT)"};
  if (o.seconds && !o.command.empty()) return UsageError{"-t and a command exclude each other"};
  if (mount_given && o.mount.empty()) return UsageError{"-m needs a directory"};
  for (const auto& e : o.events)
    if (e.empty()) return UsageError{"-e needs an event name"};
  return {};
}

}  // namespace

const char* usage_text() {
  return "usage: eventfs-record [-m MOUNT] -e EVENT... [-F FORMAT] [-o OUT] [-n NICE] [-t SECONDS | -- COMMAND [ARGS]]\n"
         "  -m MOUNT    the eventfs mount (default: /sys/kernel/events if eventfs\n"
         "              is mounted there, else the one eventfs mount there is)\n"
         "  -e EVENT    a stable event or a glob ('sched_*'); repeat for more\n"
         "  -F FORMAT   ctf (the default): a CTF 1.8 trace directory;\n"
         "              trace.dat: one file for trace-cmd report and KernelShark\n"
         "              (also --format=FORMAT)\n"
         "  -o OUT      the CTF directory (new or empty) or the trace.dat (new) to\n"
         "              write (default ./eventfs-record-YYYYMMDD-HHMMSS, .dat for trace.dat)\n"
         "  -n NICE     the nice value of the threads that read the streams\n"
         "              (default: 10 below eventfs-record's own, where it may)\n"
         "  -t SECONDS  record for this long (default: until Ctrl-C, or until COMMAND ends)\n"
         "  -h, --help  this help;  -V, --version  the version\n"
         "See eventfs-record(1).\n";
}

Result<Options, UsageError> parse_options(int argc, char** argv) {
  Options o;
  bool mount_given = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
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
    if (a.rfind("--format", 0) == 0) {
      // --format=FORMAT or --format FORMAT: -F's long form.
      std::string value;
      if (a.size() > 8 && a[8] == '=') value = a.substr(9);
      else if (a.size() == 8 && i + 1 < argc) value = argv[++i];
      else if (a.size() == 8) return UsageError{"option --format needs a value"};
      else return UsageError{"unknown option '" + a + "'"};
      auto format = parse_format(value);
      if (!format) return std::move(format).error();
      o.format = *format;
      continue;
    }
    if (UsageStatus s = take_option(argc, argv, i, o, mount_given); !s) return std::move(s).error();
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (UsageStatus s = check(o, mount_given); !s) return std::move(s).error();
  return o;
}

}  // namespace eventfs::recorder
