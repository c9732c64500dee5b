#include "convert/options.h"

#include <cstring>

namespace eventfs::convert {

const char* usage_text() {
  return "usage: eventfs-convert [-c CATALOG] [-e EVENT...] [-F FORMAT] -o OUT TRACE.DAT\n"
         "       eventfs-convert [-c CATALOG] -l TRACE.DAT\n"
         "  TRACE.DAT   a recording of trace-cmd record (version 6 or 7), of any kernel\n"
         "  -c CATALOG  the catalog file or directory (default: the built-in one)\n"
         "  -e EVENT    a stable event or a glob ('sched_*'); repeat for more\n"
         "              (default: every stable event the recording supplies)\n"
         "  -F FORMAT   ctf (the default): a CTF 1.8 trace directory; trace.dat: one\n"
         "              file for trace-cmd report and KernelShark (also --format=FORMAT)\n"
         "  -o OUT      the CTF directory (new or empty) or the trace.dat (new)\n"
         "  -l          list the stable events the recording supplies, then the others\n"
         "              with the reason, as an eventfs mount's available_events and\n"
         "              unavailable_events do\n"
         "  -h, --help  this help;  -V, --version  the version\n"
         "See eventfs-convert(1).\n";
}

Result<Options, UsageError> parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (a == "-V" || a == "--version") {
      o.version = true;
      return o;
    }
    if (a == "-l") {
      o.list = true;
      continue;
    }
    std::string flag, value;
    if (a.rfind("--format=", 0) == 0) {
      flag = "-F";
      value = a.substr(9);
    } else if (a.size() >= 2 && a[0] == '-' && std::strchr("ceFo", a[1]) && (a.size() == 2 || a[1] != '-')) {
      flag = a.substr(0, 2);
      if (a.size() > 2) value = a.substr(2);
      else if (i + 1 < argc) value = argv[++i];
      else return UsageError{"option " + flag + " needs a value"};
    } else if (a.size() > 1 && a[0] == '-') {
      return UsageError{"unknown option '" + a + "'"};
    } else {
      if (!o.input.empty()) return UsageError{"one TRACE.DAT only ('" + o.input + "' and '" + a + "')"};
      o.input = a;
      continue;
    }
    if (flag == "-c") o.catalog = value;
    else if (flag == "-e") o.events.push_back(value);
    else if (flag == "-o") o.out = value;
    else if (value == "ctf") o.format = recorder::OutputFormat::kCtf;
    else if (value == "trace.dat") o.format = recorder::OutputFormat::kTraceDat;
    else return UsageError{"-F needs ctf or trace.dat, not '" + value + "'"};
  }
  if (o.input.empty()) return UsageError{"no TRACE.DAT given"};
  if (!o.list && o.out.empty()) return UsageError{"no output given (-o OUT)"};
  for (const auto& e : o.events)
    if (e.empty()) return UsageError{"-e needs an event name"};
  return o;
}

}  // namespace eventfs::convert
