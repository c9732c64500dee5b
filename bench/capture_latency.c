/* Capture-to-applied latency of save: triggers (eventfs(5), "Variables").
 *
 *   capture_latency MOUNT INSTANCE_DIR [ROUNDS]     (root; bench/capture_latency.sh)
 *
 * A variable `lat` is named by raw/sched/sched_wakeup/filter and captured by
 * `save:lat=count` on raw/syscalls/sys_enter_read from this program's own
 * reads of /dev/zero with a count no other read of it has. Each round:
 *   capture: clock before read(2), until the kernel's filter in eventfs's
 *            instance (INSTANCE_DIR/events/sched/sched_wakeup/filter) shows
 *            the new value;
 *   direct:  the same for a write of lat=VALUE to MOUNT/variables, the
 *            baseline: the rewrite alone, without the capture.
 * Rounds are 2 ms apart. Prints the median and 90th percentile of each, in microseconds, and their
 * ratio. The filter file is polled every 20 us: figures are upper bounds by
 * that much. A measurement: exits 0 whatever the figures. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int put(const char* path, const char* text, int append) {
  int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
  if (fd < 0) return -1;
  int ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
  close(fd);
  return ok ? 0 : -1;
}

/* Waits until `path` holds `want` (one line); the time it took, or -1 after 2 s. */
static double wait_for(const char* path, const char* want, double t0) {
  char buf[256];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) {
      buf[n] = 0;
      if (strcmp(buf, want) == 0) break;
    }
    if (now_us() - t0 > 2e6) {
      close(fd);
      return -1;
    }
    usleep(20);
  }
  double t = now_us() - t0;
  close(fd);
  return t;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: capture_latency MOUNT INSTANCE_DIR [ROUNDS]\n");
    return 2;
  }
  const char* mnt = argv[1];
  const char* inst = argv[2];
  int rounds = argc > 3 ? atoi(argv[3]) : 200;
  if (rounds < 1 || rounds > 100000) rounds = 200;
  char p_vars[4096], p_filter[4096], p_trigger[4096], p_kfilter[4096];
  snprintf(p_vars, sizeof p_vars, "%s/variables", mnt);
  snprintf(p_filter, sizeof p_filter, "%s/raw/sched/sched_wakeup/filter", mnt);
  snprintf(p_trigger, sizeof p_trigger, "%s/raw/syscalls/sys_enter_read/trigger", mnt);
  snprintf(p_kfilter, sizeof p_kfilter, "%s/events/sched/sched_wakeup/filter", inst);
  prctl(PR_SET_NAME, "efs_lat");
  if (put(p_vars, "lat=0\n", 0) || put(p_filter, "pid == lat\n", 0) ||
      put(p_trigger, "save:lat=count if comm == \"efs_lat\" && count > 100000 && count < 200000\n", 1)) {
    fprintf(stderr, "capture_latency: cannot set the variable, filter and save up under %s\n", mnt);
    return 1;
  }
  int zero = open("/dev/zero", O_RDONLY);
  static char buf[200000];
  double* cap = calloc(rounds, sizeof *cap);
  double* dir = calloc(rounds, sizeof *dir);
  int ncap = 0, ndir = 0, missed = 0;
  char want[64], text[64];
  for (int i = 0; i < rounds; ++i) {
    const int count = 100001 + i;
    snprintf(want, sizeof want, "pid == %d\n", count);
    /* Captures further apart than the engine's busy interval (1 ms): one
     * sooner after the last would wait for it (eventfs(5), "Timing"). */
    usleep(2000);
    double t0 = now_us();
    if (read(zero, buf, count) != count) break;
    double t = wait_for(p_kfilter, want, t0);
    if (t < 0) ++missed; else cap[ncap++] = t;
    const int value = 300001 + i;
    snprintf(text, sizeof text, "lat=%d\n", value);
    snprintf(want, sizeof want, "pid == %d\n", value);
    t0 = now_us();
    if (put(p_vars, text, 0)) break;
    t = wait_for(p_kfilter, want, t0);
    if (t < 0) ++missed; else dir[ndir++] = t;
  }
  put(p_trigger, "!save:lat=count\n", 1);
  put(p_filter, "0\n", 0);
  put(p_vars, "!lat\n", 0);
  if (!ncap || !ndir) {
    fprintf(stderr, "capture_latency: no round completed (%d missed)\n", missed);
    return 1;
  }
  qsort(cap, ncap, sizeof *cap, cmp);
  qsort(dir, ndir, sizeof *dir, cmp);
  printf("rounds %d, missed %d (not applied within 2 s)\n", rounds, missed);
  printf("capture (event to rewritten kernel filter): median %.0f us, p90 %.0f us, max %.0f us\n", cap[ncap / 2],
         cap[ncap * 9 / 10], cap[ncap - 1]);
  printf("direct  (write of variables to rewritten filter): median %.0f us, p90 %.0f us, max %.0f us\n", dir[ndir / 2],
         dir[ndir * 9 / 10], dir[ndir - 1]);
  printf("ratio capture/direct (median): %.2f\n", cap[ncap / 2] / dir[ndir / 2]);
  return 0;
}
