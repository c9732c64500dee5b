/* tracedat_count: counts the events of a trace-cmd trace.dat (uncompressed:
 * recorded with --compression none) without formatting them, as
 * `trace-cmd report | wc -l` would, but at memory speed: walks the kernel
 * ring-buffer sub-buffers of the per-CPU data sections whose offsets and
 * sizes trace-cmd record printed ("CPUn data recorded at offset=0x... /
 * N bytes in size"), counting records by their headers (ring/rb_event.h)
 * and the lost events the sub-buffers are marked with.
 *   tracedat_count FILE OFFSET SIZE [OFFSET SIZE]...
 * Prints "events=N missed=M gaps=G subbufs=S data_bytes=B" (missed: the
 * counts the marks carry; gaps: marks, with or without a count). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/rb_event.h"

/* The sub-buffer size of the file: after the magic, "tracing", the version
 * string, the endianness and the size of a long. */
static long subbuf_size(int fd, int *long_size)
{
	unsigned char h[64];
	ssize_t n = pread(fd, h, sizeof h, 0);
	static const unsigned char magic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
	if (n < 32 || memcmp(h, magic, sizeof magic) != 0)
		return -1;
	size_t at = sizeof magic;
	while (at < (size_t)n && h[at])
		at++;
	at++;
	if (at + 6 > (size_t)n || h[at] != 0)  /* little endian only */
		return -1;
	*long_size = h[at + 1];
	unsigned int size;
	memcpy(&size, h + at + 2, 4);
	return size;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc % 2)
		return fprintf(stderr, "usage: %s FILE OFFSET SIZE [OFFSET SIZE]...\n", argv[0]), 2;
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return perror(argv[1]), 1;
	int long_size = 0;
	long page = subbuf_size(fd, &long_size);
	if (page < 64 || page > (1 << 24) || long_size != 8)
		return fprintf(stderr, "%s: not a little-endian 64-bit trace.dat\n", argv[1]), 1;
	size_t chunk = (size_t)page * 256;
	unsigned char *buf = malloc(chunk);
	if (!buf)
		return perror("malloc"), 1;
	unsigned long long events = 0, missed = 0, gaps = 0, subbufs = 0, data_bytes = 0;
	for (int a = 2; a < argc; a += 2) {
		unsigned long long off = strtoull(argv[a], NULL, 0), size = strtoull(argv[a + 1], NULL, 0);
		data_bytes += size;
		for (unsigned long long done = 0; done < size;) {
			size_t want = size - done < chunk ? (size_t)(size - done) : chunk;
			ssize_t n = pread(fd, buf, want, (off_t)(off + done));
			if (n <= 0)
				return fprintf(stderr, "%s: %s at %llu\n", argv[1], n ? strerror(errno) : "end of file", off + done), 1;
			for (size_t p = 0; p + (size_t)page <= (size_t)n; p += (size_t)page) {
				const unsigned char *sb = buf + p;
				uint64_t commit;
				memcpy(&commit, sb + 8, 8);
				uint32_t len = (uint32_t)(commit & ((1u << 27) - 1));
				if (len > page - 16)
					continue;
				subbufs++;
				if (commit & (1ull << 31)) {
					gaps++;
					if ((commit & (1ull << 30)) && 16 + len + 8 <= (uint64_t)page) {
						uint64_t m;
						memcpy(&m, sb + 16 + len, 8);
						missed += m;
					}
				}
				uint32_t at = 0;
				uint64_t ts = 0;
				events += eventfs_rb_count(sb + 16, len, 0, &at, &ts);
			}
			done += (unsigned long long)n - (unsigned long long)n % (unsigned long long)page;
			if ((size_t)n < (size_t)page)
				break;
		}
	}
	printf("events=%llu missed=%llu gaps=%llu subbufs=%llu data_bytes=%llu\n", events, missed, gaps, subbufs, data_bytes);
	return 0;
}
