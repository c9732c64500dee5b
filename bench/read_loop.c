/* read_loop: open/read-until-EOF/close one file over and over, like `cat`
 * does (raw syscalls: no stdio, no fstat, no isatty), and print the rate.
 *
 *   read_loop [-n ITERATIONS | -t SECONDS] [-w WARMUP] PATH
 *
 * Default: time-bounded, 2 seconds, after 1000 warm-up iterations.
 * Prints one line:
 *   path=PATH ops=N secs=S ops_per_s=R bytes_per_op=B
 * Exit 1 if any open/read/close fails or the size changes between
 * iterations (the file is expected to be constant).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[128 * 1024]; /* cat's buffer size on Debian 12 */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One cat-like pass; returns the byte count, or -1 with errno set. */
static long long one_pass(const char* path) {
  errno = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long long total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    if (n == 0) break;
    total += n;
  }
  if (close(fd) != 0) return -1;
  return total;
}

static void usage(void) {
  fprintf(stderr, "usage: read_loop [-n ITERATIONS | -t SECONDS] [-w WARMUP] PATH\n");
  exit(2);
}

int main(int argc, char** argv) {
  long long iterations = 0; /* 0: time-bounded */
  double seconds = 2.0;
  long long warmup = 1000;
  int opt;
  while ((opt = getopt(argc, argv, "n:t:w:")) != -1) {
    switch (opt) {
      case 'n': iterations = atoll(optarg); break;
      case 't': seconds = atof(optarg); break;
      case 'w': warmup = atoll(optarg); break;
      default: usage();
    }
  }
  if (optind != argc - 1 || iterations < 0 || seconds <= 0 || warmup < 0) usage();
  const char* path = argv[optind];

  long long size = one_pass(path);
  if (size < 0) {
    fprintf(stderr, "read_loop: %s: %s\n", path, strerror(errno));
    return 1;
  }
  for (long long i = 0; i < warmup; i++) {
    if (one_pass(path) != size) goto bad;
  }

  long long done = 0;
  double start = now(), end;
  if (iterations > 0) {
    for (; done < iterations; done++)
      if (one_pass(path) != size) goto bad;
    end = now();
  } else {
    double deadline = start + seconds;
    for (;;) {
      /* check the clock every 256 passes: a pass costs microseconds */
      for (int k = 0; k < 256; k++, done++)
        if (one_pass(path) != size) goto bad;
      end = now();
      if (end >= deadline) break;
    }
  }
  double secs = end - start;
  printf("path=%s ops=%lld secs=%.3f ops_per_s=%.0f bytes_per_op=%lld\n", path, done, secs,
         (double)done / secs, size);
  return 0;

bad:
  /* one_pass sets errno on failure; a pass that succeeded with another size does not */
  fprintf(stderr, "read_loop: %s: %s\n", path, errno ? strerror(errno) : "size changed between passes");
  return 1;
}
