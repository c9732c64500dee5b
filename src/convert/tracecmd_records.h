/* The records of a trace.dat in time order, every buffer's (the top
 * instance's and those of trace-cmd record -B) merged, through libtracecmd's
 * installed read API (tracecmd_open, tracecmd_iterate_events_multi). C: trace-cmd.h
 * includes tracefs.h, which does not compile as C++. A record of a file in
 * the other byte order is handed over with its fields in the host's (each
 * field of its format swapped by its size, arrays element by element,
 * text left alone). */
#ifndef EVENTFS_CONVERT_TRACECMD_RECORDS_H
#define EVENTFS_CONVERT_TRACECMD_RECORDS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct eventfs_dat_record {
	int cpu;
	uint64_t ts;
	long long missed;  /* events lost before it on its CPU; -1: some, count unknown */
	const uint8_t *data; /* the event, common_type first */
	uint32_t size;
};

/* Called for each record; non-zero stops the walk. */
typedef int (*eventfs_dat_record_fn)(const struct eventfs_dat_record *r, void *data);

/* Walks every record of `path`; 0, or -1 when libtracecmd cannot open it,
 * or what `fn` returned to stop. `swap`: the file's byte order is not the
 * host's. */
int eventfs_dat_walk(const char *path, int swap, eventfs_dat_record_fn fn, void *data);

#ifdef __cplusplus
}
#endif

#endif
