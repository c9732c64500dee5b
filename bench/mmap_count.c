/* mmap_count: counts the records of one CPU's ring of a tracefs instance
 * through the kernel's memory-mapped ring (Linux >= 6.10), as eventfs's
 * default reader gets them, without eventfs: the baseline that shows what
 * the mapping interface itself costs against read(2) of trace_pipe_raw.
 *   mmap_count PATH IDLE_MS [CPU]
 * PATH: per_cpu/cpuN/trace_pipe_raw of the instance; CPU: the CPU to run on
 * (N, where eventfs runs its reader of that ring: the kernel then consumes
 * the events of each reader sub-buffer where they were written; from the
 * other CPU it took twice the CPU time at times). Each reader sub-buffer
 * (TRACE_MMAP_IOCTL_GET_READER) is walked by its event headers
 * (ring/rb_event.h, as eventfs walks them, and as stream_count direct-bare
 * counts what read(2) gives), from where the last walk of it ended, its
 * place and time stamp kept; after a sub-buffer well short of full
 * (the writer's) it waits for readiness (or 10 ms), as stream_count's direct
 * reader does. Stops when nothing came for IDLE_MS after something did, or
 * at SIGTERM, and prints "events=N lost=N gaps=N reads=N bytes=N cpu_s=X"
 * (reads: GET_READER calls; lost: the sub-buffers' missed-event counts, or
 * the growth of the meta page's overrun counter if that is more). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ring/rb_event.h"

/* The head of struct trace_buffer_meta (include/uapi/linux/trace_mmap.h). */
struct meta {
	uint32_t meta_page_size, meta_struct_len, subbuf_size, nr_subbufs;
	uint64_t reader_lost_events;
	uint32_t reader_id, reader_read;
	uint64_t flags, entries, overrun, read;
};
#define GET_READER _IO('R', 0x20)

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4)
		return fprintf(stderr, "usage: %s PATH IDLE_MS [CPU]\n", argv[0]), 2;
	int idle_ms = atoi(argv[2]);
	if (argc == 4) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[3]), &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0)
			return perror("sched_setaffinity"), 1;
	}
	int fd = open(argv[1], O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return perror(argv[1]), 1;
	long page = sysconf(_SC_PAGESIZE);
	const volatile struct meta *m = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return perror("mmap of the meta page"), 1;
	size_t data_len = (size_t)m->subbuf_size * m->nr_subbufs;
	unsigned char *data = mmap(NULL, data_len, PROT_READ, MAP_SHARED, fd, m->meta_page_size);
	if (data == MAP_FAILED)
		return perror("mmap of the sub-buffers"), 1;
	signal(SIGTERM, on_term);
	unsigned long long events = 0, lost = 0, gaps = 0, reads = 0, bytes = 0;
	const uint64_t overrun0 = m->overrun;
	uint32_t cur = m->reader_id, from = m->reader_read, at = 0;
	uint64_t ts = 0;
	int quiet = 0, fresh = 1;
	while (!stop) {
		/* The reader sub-buffer, from `from` on; the walk keeps its place
		 * (`at`, `ts`) while the writer appends to it. */
		const unsigned char *page = data + (size_t)cur * m->subbuf_size;
		uint64_t commit = __atomic_load_n((const uint64_t *)(page + 8), __ATOMIC_ACQUIRE);
		uint32_t size = (uint32_t)(commit & ((1u << 27) - 1));
		if (size > m->subbuf_size - 16)
			return fprintf(stderr, "bad sub-buffer %u\n", cur), 1;
		if (fresh) {
			if (commit & (1ull << 31)) {
				gaps++;
				uint64_t count;
				if ((commit & (1ull << 30)) && 16 + size + 8 <= m->subbuf_size) {
					memcpy(&count, page + 16 + size, 8);
					lost += count;
				}
			}
			memcpy(&ts, page, 8);
			at = 0;
			fresh = 0;
		}
		unsigned long long n = eventfs_rb_count(page + 16, size, from, &at, &ts);
		bytes += size > from ? size - from : 0;
		from = size;
		events += n;
		if (ioctl(fd, GET_READER) < 0)
			return perror("TRACE_MMAP_IOCTL_GET_READER"), 1;
		reads++;
		if (m->reader_id != cur) {
			cur = m->reader_id;
			from = 0;
			fresh = 1;
			quiet = 0;
			continue;
		}
		if (n)
			quiet = 0;
		/* Kept: the writer's sub-buffer (wait for the ring's readiness),
		 * unless the ring holds more (on 6.18 a GET_READER that finds
		 * unread events on the reader sub-buffer only counts them). */
		if ((n == 0 || size < m->subbuf_size / 4 * 3) && m->entries <= m->overrun + m->read) {
			struct pollfd p = {fd, POLLIN, 0};
			if (poll(&p, 1, 10) == 0 && n == 0 && events && (quiet += 10) >= idle_ms)
				break;
		}
	}
	if (m->overrun - overrun0 > lost)
		lost = m->overrun - overrun0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("events=%llu lost=%llu gaps=%llu reads=%llu bytes=%llu cpu_s=%.3f\n", events, lost, gaps, reads, bytes,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
