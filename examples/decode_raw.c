/* decode_raw: prints the records of an eventfs per-CPU binary stream, e.g.
 *   decode_raw /mnt/events/per_cpu/cpu0/trace_pipe_raw
 * Uses nothing but <eventfs/record.h>; stop it with ^C (a stream never ends).
 */
#include <eventfs/record.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static uint64_t buf[EVENTFS_RECORD_MAX_SIZE / 8]; /* room for any record: reads return whole ones */
	int fd = argc == 2 ? open(argv[1], O_RDONLY) : -1;
	ssize_t n;

	if (fd < 0)
		return fprintf(stderr, "usage: %s per_cpu/cpuN/trace_pipe_raw\n", argv[0]), 2;
	setvbuf(stdout, NULL, _IOLBF, 0); /* live: a line as soon as its record comes */
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		const char *p = (const char *)buf, *end = p + n;
		const struct eventfs_record_header *h;
		for (; p < end; p += h->size) {
			h = (const void *)p;
			if (h->id == EVENTFS_ID_LOST) {
				const struct eventfs_lost *l = EVENTFS_RECORD_PAYLOAD(h);
				printf("%" PRIu64 " cpu %" PRIu32 " lost %" PRIu64 "%s\n", h->timestamp, l->cpu, l->count,
				       l->flags & EVENTFS_LOST_COUNT_UNKNOWN ? " (estimated)" : "");
			} else
				printf("%" PRIu64 " pid %" PRId32 " id %" PRIu32 " size %" PRIu32 "\n", h->timestamp, h->pid, h->id,
				       h->size);
		}
	}
	return n < 0;
}
