/* startup_probe: time a mount command from exec to a ready mount.
 *
 *   startup_probe [-T TIMEOUT_MS] [-p POLL_US] MOUNTPOINT PROBE_PATH -- CMD [ARG...]
 *
 * Forks and execs CMD (a daemonizing mount command such as `eventfs MNT`,
 * which returns once the mount is up). While it runs, polls
 * /proc/self/mountinfo for MOUNTPOINT every POLL_US microseconds (default
 * 200; 0 turns polling off). After CMD has exited 0, stat()s PROBE_PATH
 * until it succeeds. Prints one line, all times in ms from just before fork:
 *   exit_ms=E status=S mountinfo_ms=M ready_ms=R
 * mountinfo_ms is -1 if the mount was not seen before CMD exited (polling off,
 * or the mount appeared and CMD exited within one poll interval: then the
 * mount was checked once more right after the exit).
 * Exit 0 if the mount became ready, 1 otherwise (command failed, timeout).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static char mi_buf[1 << 20];

/* Is `mnt` (an absolute, canonical path without blanks) a mount point in
 * /proc/self/mountinfo? Field 5 of each line is the mount point. */
static int mounted(const char* mnt) {
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, mi_buf + len, sizeof mi_buf - 1 - len);
    if (n <= 0) break;
    len += (size_t)n;
    if (len == sizeof mi_buf - 1) break;
  }
  close(fd);
  mi_buf[len] = '\0';
  size_t mlen = strlen(mnt);
  for (char* line = mi_buf; line && *line;) {
    char* nl = strchr(line, '\n');
    char* p = line;
    for (int field = 0; field < 4 && p; field++) {
      p = strchr(p, ' ');
      if (p) p++;
    }
    if (p && (!nl || p < nl) && strncmp(p, mnt, mlen) == 0 && (p[mlen] == ' ')) return 1;
    line = nl ? nl + 1 : NULL;
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: startup_probe [-T TIMEOUT_MS] [-p POLL_US] MOUNTPOINT PROBE_PATH -- CMD [ARG...]\n");
  exit(2);
}

int main(int argc, char** argv) {
  double timeout_ms = 10000;
  long poll_us = 200;
  int opt;
  while ((opt = getopt(argc, argv, "+T:p:")) != -1) {
    switch (opt) {
      case 'T': timeout_ms = atof(optarg); break;
      case 'p': poll_us = atol(optarg); break;
      default: usage();
    }
  }
  if (argc - optind < 3) usage();
  char mnt[PATH_MAX];
  if (!realpath(argv[optind], mnt)) {
    fprintf(stderr, "startup_probe: %s: %s\n", argv[optind], strerror(errno));
    return 1;
  }
  const char* probe = argv[optind + 1];
  char** cmd = argv + optind + 2;
  if (strcmp(cmd[0], "--") == 0) cmd++;
  if (!cmd[0]) usage();
  if (mounted(mnt)) {
    fprintf(stderr, "startup_probe: %s is already a mount point\n", mnt);
    return 1;
  }

  double t0 = now_ms();
  pid_t pid = fork();
  if (pid < 0) {
    perror("startup_probe: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(cmd[0], cmd);
    fprintf(stderr, "startup_probe: %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
  }

  double exit_ms = -1, mountinfo_ms = -1, ready_ms = -1;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    double t = now_ms() - t0;
    if (r == pid) {
      exit_ms = t;
      break;
    }
    if (poll_us > 0 && mountinfo_ms < 0 && mounted(mnt)) mountinfo_ms = now_ms() - t0;
    if (t > timeout_ms) {
      fprintf(stderr, "startup_probe: command still running after %.0f ms\n", timeout_ms);
      kill(pid, SIGTERM);
      waitpid(pid, &status, 0);
      return 1;
    }
    sleep_us(poll_us > 0 ? poll_us : 100);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0) {
    printf("exit_ms=%.2f status=%d mountinfo_ms=%.2f ready_ms=-1\n", exit_ms, code, mountinfo_ms);
    return 1;
  }
  if (!mounted(mnt)) {
    fprintf(stderr, "startup_probe: command exited 0 but %s is not a mount point\n", mnt);
  }
  for (;;) {
    struct stat st;
    if (stat(probe, &st) == 0) {
      ready_ms = now_ms() - t0;
      break;
    }
    if (now_ms() - t0 > timeout_ms) {
      fprintf(stderr, "startup_probe: %s: %s (gave up after %.0f ms)\n", probe, strerror(errno),
              timeout_ms);
      printf("exit_ms=%.2f status=0 mountinfo_ms=%.2f ready_ms=-1\n", exit_ms, mountinfo_ms);
      return 1;
    }
    sleep_us(100);
  }
  printf("exit_ms=%.2f status=0 mountinfo_ms=%.2f ready_ms=%.2f\n", exit_ms, mountinfo_ms,
         ready_ms);
  return 0;
}
