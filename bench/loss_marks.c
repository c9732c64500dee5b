/* loss_marks: where a slow reader of an eventfs CPU stream is told of its
 * loss. A thread pinned to CPU writes COUNT numbered markers ("lm-<n>") to
 * the instance's trace_marker as fast as it can while this reader reads
 * MOUNT/per_cpu/cpuCPU/trace_pipe_raw READ_KB at a time with PAUSE_MS
 * between reads, until the stream is quiet for a second after the last
 * marker. Each marker makes PROJECTIONS stable records (ids FIRST_ID,
 * FIRST_ID+1, ...), so record i of marker n is item n*PROJECTIONS+i.
 * RATE: markers a second (0 or none: as fast as it can).
 *
 *   loss_marks MOUNT TRACE_MARKER CPU COUNT READ_KB PAUSE_MS FIRST_ID PROJECTIONS [RATE]
 *
 * Between two records read (and before the first, after the last) the
 * lost-events records should add up to the items missing there. Prints one
 * line:
 *   items=I read=R gaps=G missing=M lost_records=L lost_total=T
 *   wrong_count=A no_lost_record=B lost_where_nothing_missing=C misplaced=A+B+C
 * wrong_count: gaps whose lost-events records add up to another count;
 * no_lost_record: gaps with none; lost_where_nothing_missing: lost-events
 * records between two neighbouring items. A kernel loss counts raw events:
 * with PROJECTIONS > 1 its gap shows as wrong_count (the script prints the
 * kernel's loss beside). Exit 1 on a malformed or unexpected record or an
 * error. A measurement: the figures are the output, not the exit status. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <eventfs/record.h>

static const char *marker_path;
static int cpu;
static long count;
static double rate;
static volatile int writer_done;

static void *write_markers(void *arg)
{
	(void)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	int fd = open(marker_path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(marker_path);
		exit(1);
	}
	char msg[32];
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long n = 0; n < count;) {
		if (rate > 0 && n % 64 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			double ahead = n / rate - ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9);
			if (ahead > 0) {
				struct timespec d = {(time_t)ahead, (long)((ahead - (time_t)ahead) * 1e9)};
				nanosleep(&d, NULL);
			}
		}
		int len = snprintf(msg, sizeof msg, "lm-%ld", n);
		if (write(fd, msg, (size_t)len) == len)
			n++;
		else if (errno != EINTR && errno != EBADF) {
			perror("trace_marker");
			exit(1);
		}
	}
	close(fd);
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct tally {
	long long next;     /* the item after the last record read */
	uint64_t reported;  /* lost since that record */
	long long lost_records_since;
	long long gaps, missing, lost_records, lost_total, wrong, none, spurious, read;
};

/* The reports since the last record against the items missing before `item`. */
static void gap(struct tally *t, long long item)
{
	long long missing = item - t->next;
	if (missing > 0) {
		t->gaps++;
		t->missing += missing;
		if (t->reported == 0)
			t->none++;
		else if (t->reported != (uint64_t)missing)
			t->wrong++;
	} else if (t->lost_records_since > 0) {
		t->spurious += t->lost_records_since;
	}
	t->reported = 0;
	t->lost_records_since = 0;
}

static long long item_of(const struct eventfs_record_header *h, uint32_t first_id, uint32_t projections)
{
	const char *text = (const char *)EVENTFS_RECORD_PAYLOAD(h);
	size_t n = EVENTFS_RECORD_PAYLOAD_SIZE(h);
	if (h->id < first_id || h->id >= first_id + projections || n < 4 || memcmp(text, "lm-", 3) != 0)
		return -1;
	long long v = 0;
	for (size_t i = 3; i < n && text[i] >= '0' && text[i] <= '9'; i++)
		v = v * 10 + (text[i] - '0');
	return v * projections + (h->id - first_id);
}

int main(int argc, char **argv)
{
	if (argc != 9 && argc != 10)
		return fprintf(stderr, "usage: %s MOUNT TRACE_MARKER CPU COUNT READ_KB PAUSE_MS FIRST_ID PROJECTIONS [RATE]\n",
			       argv[0]), 2;
	rate = argc == 10 ? atof(argv[9]) : 0;
	marker_path = argv[2];
	cpu = atoi(argv[3]);
	count = atol(argv[4]);
	size_t read_bytes = (size_t)atol(argv[5]) << 10;
	long pause_ms = atol(argv[6]);
	uint32_t first_id = (uint32_t)atol(argv[7]), projections = (uint32_t)atol(argv[8]);
	if (count <= 0 || read_bytes == 0 || projections == 0)
		return fprintf(stderr, "loss_marks: COUNT, READ_KB and PROJECTIONS must be positive\n"), 2;
	char path[4096];
	snprintf(path, sizeof path, "%s/per_cpu/cpu%d/trace_pipe_raw", argv[1], cpu);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return perror(path), 1;
	char *buf = aligned_alloc(8, read_bytes);
	if (!buf)
		return perror("aligned_alloc"), 1;
	pthread_t writer;
	if (pthread_create(&writer, NULL, write_markers, NULL) != 0)
		return fprintf(stderr, "loss_marks: cannot start the writer\n"), 1;
	struct tally t = {0};
	const struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int ready = poll(&p, 1, 1000);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return perror("poll"), 1;
		if (ready == 0) {
			if (__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE))
				break;
			continue;
		}
		ssize_t n = read(fd, buf, read_bytes);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return perror(path), 1;
		for (size_t at = 0; at < (size_t)n;) {
			const struct eventfs_record_header *h = (const void *)(buf + at);
			uint32_t size = eventfs_record_check(h, (size_t)n - at);
			if (size == 0)
				return fprintf(stderr, "loss_marks: a malformed record at byte %zu of a read\n", at), 1;
			if (h->id == EVENTFS_ID_LOST) {
				const struct eventfs_lost *l = EVENTFS_RECORD_PAYLOAD(h);
				t.reported += l->count;
				t.lost_total += (long long)l->count;
				t.lost_records++;
				t.lost_records_since++;
			} else {
				long long item = item_of(h, first_id, projections);
				if (item < 0 || item < t.next)
					return fprintf(stderr, "loss_marks: record of id %u out of place (item %lld after %lld)\n",
						       h->id, item, t.next - 1), 1;
				gap(&t, item);
				t.next = item + 1;
				t.read++;
			}
			at += size;
		}
		if (pause_ms > 0)
			nanosleep(&pause, NULL);
	}
	pthread_join(writer, NULL);
	gap(&t, count * (long long)projections);
	printf("items=%lld read=%lld gaps=%lld missing=%lld lost_records=%lld lost_total=%lld "
	       "wrong_count=%lld no_lost_record=%lld lost_where_nothing_missing=%lld misplaced=%lld\n",
	       count * (long long)projections, t.read, t.gaps, t.missing, t.lost_records, t.lost_total, t.wrong, t.none,
	       t.spurious, t.wrong + t.none + t.spurious);
	return 0;
}
