/* stream_count: counts the records of one CPU's ring, until SIGTERM or until
 * nothing came for IDLE_MS after something did, and prints
 * "events=N lost=N gaps=N reads=N bytes=N cpu_s=X" (its own CPU time; gaps:
 * places where the kernel or eventfs reported lost events, with or without a
 * count).
 *   stream_count eventfs PATH IDLE_MS [READ_BYTES]
 *       per_cpu/cpuN/trace_pipe_raw of an eventfs mount, read(2) READ_BYTES
 *       at a time (default 65536)
 *   stream_count direct|direct-bare PATH IDLE_MS [READ_BYTES]
 *       per_cpu/cpuN/trace_pipe_raw of a tracefs instance, one sub-buffer
 *       (READ_BYTES: the instance's buffer_subbuf_size_kb, default 4096) per
 *       read(2), walked with libtraceevent's kbuffer (direct: as a tool
 *       that reads the records with libtraceevent does) or counted by their
 *       headers (direct-bare: ring/rb_event.h, as eventfs walks them; the
 *       least a reader can do); after a sub-buffer well short of full it
 *       waits for readiness (or 10 ms) */
#include <eventfs/record.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <traceevent/kbuffer.h>
#include <unistd.h>

#include "ring/rb_event.h"

/* Counts the events of a sub-buffer of 8-byte longs by their headers;
 * sets *missed to its lost-events mark (the count, -1, or 0). */
static unsigned long long bare_count(const unsigned char *page, size_t n, long long *missed, size_t *data_size)
{
	uint64_t commit;
	memcpy(&commit, page + 8, 8);
	uint32_t size = (uint32_t)(commit & ((1u << 27) - 1));
	if (n < 16 || size > n - 16)
		return *missed = 0, *data_size = 0, 0;
	*data_size = size;
	*missed = 0;
	if (commit & (1ull << 31)) {
		*missed = -1;
		if ((commit & (1ull << 30)) && 16 + size + 8 <= n)
			memcpy(missed, page + 16 + size, 8);
	}
	uint32_t at = 0;
	uint64_t ts = 0;
	return eventfs_rb_count(page + 16, size, 0, &at, &ts);
}

static volatile sig_atomic_t stop, idle;
static void on_term(int sig) { (void)sig; stop = 1; }
static void on_alarm(int sig) { (void)sig; idle = 1; }

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5)
		return fprintf(stderr, "usage: %s eventfs|eventfs-blocking|direct|direct-bare PATH IDLE_MS [READ_BYTES]\n", argv[0]), 2;
	int bare = strcmp(argv[1], "direct-bare") == 0;
	int direct = bare || strcmp(argv[1], "direct") == 0, idle_ms = atoi(argv[3]);
	int blocking = strcmp(argv[1], "eventfs-blocking") == 0;
	size_t size = argc == 5 ? strtoul(argv[4], NULL, 10) : direct ? 4096 : EVENTFS_RECORD_MAX_SIZE;
	uint64_t *buf = malloc(size + 8);
	if (!buf || size < 4096)
		return fprintf(stderr, "bad READ_BYTES\n"), 2;
	int fd = open(argv[2], O_RDONLY | (blocking ? 0 : O_NONBLOCK));
	if (fd < 0)
		return perror(argv[2]), 1;
	signal(SIGTERM, on_term);
	/* Blocking: a read that waits is ended by SIGALRM (no SA_RESTART) once
	 * nothing came for IDLE_MS. */
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval idle_timer = {{0, 0}, {idle_ms / 1000, (idle_ms % 1000) * 1000}};
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	unsigned long long events = 0, lost = 0, gaps = 0, reads = 0, bytes = 0, first_ts = 0;
	int quiet = 0, caught_up = 0;
	while (!stop) {
		/* Direct: after a sub-buffer well short of full (the writer's), wait
		 * for the kernel's readiness (the ring buffer_percent full) or 10 ms
		 * rather than read on at the writer's heels, where the kernel copies
		 * a partly written sub-buffer event by event: the cheap way to read
		 * trace_pipe_raw, and a steady baseline. */
		if (caught_up) {
			struct pollfd p = {fd, POLLIN, 0};
			poll(&p, 1, 10);
			caught_up = 0;
		}
		if (blocking)
			setitimer(ITIMER_REAL, &idle_timer, NULL);
		ssize_t n = read(fd, buf, size);
		if (blocking && n < 0) {
			if (idle && events)
				break;
			idle = 0;
			continue;
		}
		if (n <= 0) {
			struct pollfd p = {fd, POLLIN, 0};
			if (poll(&p, 1, 10) == 0 && events && (quiet += 10) >= idle_ms)
				break;
			continue;
		}
		quiet = 0;
		reads++;
		bytes += (unsigned long long)n;
		if (bare) {
			long long missed;
			size_t data_size;
			events += bare_count((const unsigned char *)buf, (size_t)n, &missed, &data_size);
			gaps += missed != 0;
			lost += missed > 0 ? (unsigned long long)missed : 0;
			caught_up = data_size < size / 4 * 3;
		} else if (direct) {
			if (kbuffer_load_subbuffer(kb, buf) < 0)
				continue;
			caught_up = (size_t)kbuffer_subbuffer_size(kb) < size / 4 * 3;
			int missed = kbuffer_missed_events(kb);
			if (missed)
				gaps++;
			if (missed > 0)
				lost += (unsigned long long)missed;
			unsigned long long ts;
			for (void *e = kbuffer_read_event(kb, &ts); e; e = kbuffer_next_event(kb, &ts))
				events++;
		} else {
			for (const char *p = (const char *)buf, *end = p + n; p < end;) {
				const struct eventfs_record_header *h = (const void *)p;
				if (first_ts == 0)
					first_ts = h->timestamp;
				if (h->id == EVENTFS_ID_LOST) {
					if (getenv("SHOW_LOST"))
						fprintf(stderr, "lost %llu at +%.3f ms\n", (unsigned long long)((const struct eventfs_lost *)EVENTFS_RECORD_PAYLOAD(h))->count, (h->timestamp - first_ts) / 1e6);
					lost += ((const struct eventfs_lost *)EVENTFS_RECORD_PAYLOAD(h))->count;
					gaps++;
				}
				else
					events++;
				p += h->size;
			}
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("events=%llu lost=%llu gaps=%llu reads=%llu bytes=%llu cpu_s=%.3f\n", events, lost, gaps, reads, bytes,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
