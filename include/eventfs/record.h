/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * eventfs/record.h - the binary framing of eventfs's per-CPU record streams.
 *
 * This header is the ABI for tool authors. It is plain C99 (and valid C++),
 * depends only on <stdint.h> and <stddef.h>, and never changes incompatibly.
 *
 * THE STREAM
 *
 *   <mount>/per_cpu/cpuN/trace_pipe_raw
 *
 * is a consuming, blocking stream of the stable records of CPU N: like
 * tracefs's trace_pipe, what one read() returns is gone for every other
 * reader. A read() returns whole records, back to back, as many as fit in
 * its buffer; a buffer of EVENTFS_RECORD_MAX_SIZE bytes or more therefore
 * always gets whole records only. A buffer smaller than the next record gets
 * its first bytes, and the following read()s of the same open file get the
 * rest before anything else. A read with nothing to return waits; with
 * O_NONBLOCK it fails with EAGAIN.
 *
 * All integers are in the byte order of the machine the stream was produced
 * on (it is not meant to cross machines unconverted).
 *
 * ONE RECORD
 *
 *   offset 0   struct eventfs_record_header  (24 bytes)
 *   offset 24  payload
 *   ...        zero padding up to header.size (a multiple of 8)
 *
 * - header.size is the total size of the record in bytes, header and padding
 *   included; it is always a multiple of EVENTFS_RECORD_ALIGN (8) and at
 *   least sizeof(struct eventfs_record_header). The next record starts at
 *   (const char *)record + header.size. Skip a record whose id you do not
 *   know by its size: that is how new events stay compatible.
 *
 * - header.id is the stable event id: the number in <mount>/<event>/id, taken
 *   from the eventfs catalog. It never comes from the kernel and never changes
 *   from one kernel to the next. Id 0 is never an event: it is
 *   EVENTFS_ID_LOST, a lost-events record (below).
 *
 * - header.version is EVENTFS_RECORD_VERSION, the framing described here
 *   (<mount>/header describes it too, in the format language). Version 1
 *   added pid to the 16-byte header of version 0; eventfs_record_check()
 *   refuses a record of any other version.
 *
 * - header.pid is the thread id the kernel recorded the event for (the raw
 *   event's common_pid, whatever common fields the kernel has around it);
 *   0 for the idle task and in lost-events records.
 *
 * - header.timestamp is the kernel's time stamp of the event in the trace
 *   clock of eventfs's tracefs instance (the "local" clock unless the mount
 *   was told otherwise), in nanoseconds for the nanosecond clocks. Records of
 *   one CPU come in time order; merging CPUs is the reader's job.
 *
 * - The payload of an event record is the stable record of that event, laid
 *   out as its <mount>/<event>/format implies: the fields in declaration
 *   order, each at the next multiple of its "align:", arrays as "count:"
 *   elements, the whole rounded up to its largest alignment -- exactly the C
 *   struct you would write from the format. For example sched_switch:
 *
 *       struct sched_switch {          offset
 *           char    prev_comm[16];      0
 *           int32_t prev_pid;          16
 *           char    prev_state;        20
 *           char    next_comm[16];     21
 *           int32_t next_pid;          40   (37 rounded up to 4)
 *       };                             44 bytes
 *
 *   The payload may be followed by up to 7 bytes of zero padding. A record
 *   never holds a payload shorter than its format implies.
 *
 * HOW FIELD VALUES ARE CONVERTED (whatever the running kernel has)
 *
 * - Integers are widened or narrowed to the stable type. Widening extends
 *   the sign of the *kernel's* field (a 4-byte kernel "long" of -1 becomes
 *   an s64 of -1; an unsigned 4-byte value is zero-extended).
 * - Integer arrays are converted element by element; elements the kernel
 *   did not supply (a shorter or dynamic array) are zero.
 * - char arrays (char name[M]) hold text, always NUL-terminated: at most
 *   M-1 bytes of the kernel's string, up to its first NUL, then NUL bytes up
 *   to M. A longer kernel string (a __data_loc filename, say) is truncated.
 * - A task state (sched_switch prev_state) is one letter: the letter of the
 *   first entry of the kernel's own __print_flags() table for the field whose
 *   bit is set ("S", "D", "T", "t", "X", "Z", "P", "I", ...), or 'R' when none
 *   is (a runnable or preempted task).
 * - A value the kernel's record was too short to hold reads as zero.
 *
 * LOST EVENTS
 *
 * When the kernel overwrote or dropped events of CPU N before eventfs read
 * them, the stream holds, at the place of the gap, a record with id
 * EVENTFS_ID_LOST and a struct eventfs_lost payload. count is the number of
 * events lost there. When the kernel marked a gap without storing its size
 * (it does so when the sub-buffer after the gap is full), flags has
 * EVENTFS_LOST_COUNT_UNKNOWN and count is eventfs's estimate from the
 * kernel's per-CPU overrun counter (0 when it could not read one). Each lost
 * event is counted once, in one lost record or another. timestamp is the
 * time stamp of the kernel sub-buffer that follows the gap (at or before the
 * first record after it), so a gap sorts into place when merging CPUs.
 *
 * READING IT
 *
 *     char buf[1 << 16];
 *     ssize_t n = read(fd, buf, sizeof buf);
 *     for (const char *p = buf; p < buf + n; ) {
 *         const struct eventfs_record_header *h =
 *             (const struct eventfs_record_header *)p;
 *         if (h->id == EVENTFS_ID_LOST) {
 *             const struct eventfs_lost *l = EVENTFS_RECORD_PAYLOAD(h);
 *             ... l->count, l->flags ...
 *         } else {
 *             ... EVENTFS_RECORD_PAYLOAD(h), h->size - sizeof *h bytes ...
 *         }
 *         p += h->size;
 *     }
 *
 * Records in a buffer are 8-byte aligned when the buffer is.
 */
#ifndef EVENTFS_RECORD_H
#define EVENTFS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every record's size is a multiple of this, and records start 8-aligned. */
#define EVENTFS_RECORD_ALIGN 8u

/* No record is larger than this (header, payload and padding). */
#define EVENTFS_RECORD_MAX_SIZE 65536u

/* The id of a lost-events record; never the id of an event. */
#define EVENTFS_ID_LOST 0u

/* struct eventfs_lost.flags: the kernel marked a gap but did not store how
 * many events it lost; count is then eventfs's estimate. */
#define EVENTFS_LOST_COUNT_UNKNOWN 0x1u

/* The framing this header describes; every record carries it (version). */
#define EVENTFS_RECORD_VERSION 1u

/* The header of every record in a per_cpu/cpuN/trace_pipe_raw stream. */
struct eventfs_record_header {
	uint32_t size;      /* total bytes: header + payload + padding; multiple of 8 */
	uint32_t id;        /* stable event id (<event>/id), or EVENTFS_ID_LOST */
	uint64_t timestamp; /* the event's time in the instance's trace clock (ns) */
	int32_t pid;        /* the thread the kernel recorded the event for (its
	                       common_pid); 0 in a lost-events record */
	uint16_t version;   /* EVENTFS_RECORD_VERSION */
	uint16_t reserved;  /* 0 */
};

/* The payload of a record whose id is EVENTFS_ID_LOST. */
struct eventfs_lost {
	uint64_t count; /* events lost at this point of the stream */
	uint32_t cpu;   /* the CPU whose events were lost (the stream's N) */
	uint32_t flags; /* EVENTFS_LOST_* */
};

/* Rounds a byte count up to EVENTFS_RECORD_ALIGN. */
#define EVENTFS_RECORD_ROUND(n) \
	(((uint32_t)(n) + (EVENTFS_RECORD_ALIGN - 1u)) & ~(uint32_t)(EVENTFS_RECORD_ALIGN - 1u))

/* The size of a record with a payload of n bytes. */
#define EVENTFS_RECORD_SIZE(n) \
	EVENTFS_RECORD_ROUND(sizeof(struct eventfs_record_header) + (uint32_t)(n))

/* The payload of record h (a const void *). */
#define EVENTFS_RECORD_PAYLOAD(h) \
	((const void *)((const char *)(h) + sizeof(struct eventfs_record_header)))

/* The number of payload bytes of record h, padding included. */
#define EVENTFS_RECORD_PAYLOAD_SIZE(h) \
	((size_t)(h)->size - sizeof(struct eventfs_record_header))

/* Checks that a record of `avail` bytes at h is well formed: returns its
 * size, or 0 if it is truncated or its size is not a valid record size. */
static inline uint32_t eventfs_record_check(const struct eventfs_record_header *h, size_t avail)
{
	if (avail < sizeof(struct eventfs_record_header))
		return 0;
	if (h->version != EVENTFS_RECORD_VERSION)
		return 0;
	if (h->size < sizeof(struct eventfs_record_header) || h->size > avail ||
	    h->size % EVENTFS_RECORD_ALIGN != 0 || h->size > EVENTFS_RECORD_MAX_SIZE)
		return 0;
	if (h->id == EVENTFS_ID_LOST &&
	    EVENTFS_RECORD_PAYLOAD_SIZE(h) < sizeof(struct eventfs_lost))
		return 0;
	return h->size;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EVENTFS_RECORD_H */
