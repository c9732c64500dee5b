// The time limits' factor, from the environment.
#include "support/time_scale.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace eventfs_it {

namespace {

double read_scale() {
  const char* s = std::getenv("EVENTFS_TEST_TIME_SCALE");
  if (s == nullptr || *s == '\0') return 1.0;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (*end != '\0' || !std::isfinite(v) || v < 1.0 || v > 100.0) {
    std::fprintf(stderr, "EVENTFS_TEST_TIME_SCALE=%s: expected a number from 1 to 100\n", s);
    std::exit(2);
  }
  return v;
}

}  // namespace

double time_scale() {
  static const double scale = read_scale();
  return scale;
}

std::chrono::milliseconds scaled(std::chrono::milliseconds limit) {
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(std::llround(limit.count() * time_scale())));
}

}  // namespace eventfs_it
