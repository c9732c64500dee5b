// eventfs-convert: a trace.dat recorded by trace-cmd on any kernel, in the
// stable schema (see eventfs-convert(1)).
#include <cstdio>
#include <new>

#include "convert/converter.h"
#include "convert/options.h"
#include "eventfs_config.h"

int main(int argc, char** argv) {
  using namespace eventfs::convert;
  auto opts = parse_options(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "eventfs-convert: %s (see eventfs-convert -h)\n", opts.error().message.c_str());
    return 2;
  }
  if (opts->help) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  if (opts->version) {
    std::puts("eventfs-convert " EVENTFS_VERSION);
    return 0;
  }
  try {
    if (opts->list) {
      auto a = list_events(*opts);
      if (!a) {
        std::fprintf(stderr, "eventfs-convert: %s\n", a.reason().c_str());
        return 1;
      }
      for (const auto& n : a->available) std::printf("%s\n", n.c_str());
      for (const auto& [n, why] : a->unavailable) std::printf("%s: %s\n", n.c_str(), why.c_str());
      return 0;
    }
    auto s = convert(*opts);
    if (!s) {
      std::fprintf(stderr, "eventfs-convert: %s\n", s.reason().c_str());
      return 1;
    }
    std::fprintf(stderr,
                 "eventfs-convert: %llu records read, %llu stable records of %zu events written to %s, %llu lost, "
                 "%llu records of other events skipped\n",
                 static_cast<unsigned long long>(s->records), static_cast<unsigned long long>(s->events), s->chosen,
                 s->out.c_str(), static_cast<unsigned long long>(s->lost),
                 static_cast<unsigned long long>(s->skipped));
    return 0;
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "eventfs-convert: %s\n", e.what());
    return 1;
  }
}
