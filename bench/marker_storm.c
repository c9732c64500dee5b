/* marker_storm: writes numbered markers to a tracefs trace_marker from one
 * CPU, as fast as it can or at a given rate, for a number of seconds.
 *   marker_storm TRACE_MARKER CPU SECONDS [PER_SECOND]
 * Prints "written=N". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return fprintf(stderr, "usage: %s TRACE_MARKER CPU SECONDS [PER_SECOND]\n", argv[0]), 2;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[2]), &set);
	sched_setaffinity(0, sizeof set, &set);
	int fd = open(argv[1], O_WRONLY);
	if (fd < 0)
		return perror(argv[1]), 1;
	double secs = atof(argv[3]), rate = argc > 4 ? atof(argv[4]) : 0, start = now(), t;
	unsigned long n = 0;
	char msg[64];
	while ((t = now() - start) < secs) {
		if (rate > 0 && n >= rate * t) {
			struct timespec d = {0, 20000};
			nanosleep(&d, NULL);
			continue;
		}
		int len = snprintf(msg, sizeof msg, "storm-%s-%lu", argv[2], n);
		if (write(fd, msg, (size_t)len) == len)
			n++;
	}
	printf("written=%lu\n", n);
	return 0;
}
