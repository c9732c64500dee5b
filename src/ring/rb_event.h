/* The events of a ring-buffer sub-buffer, one step at a time, as the kernel
 * lays them out (its events/header_event file describes the header):
 *
 *   u32 word: type_len (5 bits) and time_delta (27 bits), in the host's
 *             bit-field order; then array[], in 4-byte words:
 *   type_len 1..28  data of type_len * 4 bytes at array[0]
 *   type_len 0      array[0]: 4 + the data's length; the data at array[1]
 *   29 padding      time_delta 0: nothing more in the sub-buffer; else
 *                   a discarded event of 4 + array[0] bytes
 *   30 time extend  time stamp += (array[0] << 27) + time_delta (8 bytes)
 *   31 time stamp   an absolute time stamp: (array[0] << 27) | time_delta,
 *                   with the top five bits of the current one (8 bytes; the
 *                   kernel's own reader also carries into bit 59 where the
 *                   result would go back in time, kbuffer does not, nor
 *                   does this: it takes a clock past 2^59)
 *
 * The same steps as libtraceevent's kbuffer (the tests hold one against the
 * other on random sub-buffers of 4- and 8-byte longs and on the running
 * kernel's own), without its calls per record: it runs once per record on
 * the hot path, and libtraceevent may be built without optimization
 * (projection_bench's Walk and KbufferWalk compare the two; docs/measurements.md).
 *
 * C, so that the benchmark's C readers count records the same way. */
#ifndef EVENTFS_RING_RB_EVENT_H
#define EVENTFS_RING_RB_EVENT_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	EVENTFS_RB_PADDING = 29,
	EVENTFS_RB_TIME_EXTEND = 30,
	EVENTFS_RB_TIME_STAMP = 31,
};

/* What eventfs_rb_step() found. */
enum eventfs_rb_kind {
	EVENTFS_RB_DATA,  /* an event: ev is set, *ts is its time stamp */
	EVENTFS_RB_SKIP,  /* padding or a time stamp: go on at ev->next */
	EVENTFS_RB_END,   /* no more events */
	EVENTFS_RB_BAD,   /* a header or an event runs past the data */
};

struct eventfs_rb_event {
	uint32_t data;  /* offset of the event's data (common_type first) */
	uint32_t len;   /* its length in bytes, a multiple of 4 */
	uint32_t next;  /* offset of the next header */
};

/* The top five bits of a time stamp, which an absolute one does not hold. */
#define EVENTFS_RB_TS_MSB (0xf8ull << 56)

static inline void eventfs_rb_split(uint32_t word, uint32_t *type_len, uint32_t *delta)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	*type_len = word >> 27;
	*delta = word & ((1u << 27) - 1);
#else
	*type_len = word & 31;
	*delta = word >> 5;
#endif
}

/* The header at offset `at` of the `size` bytes of events at `events`; *ts
 * is the time stamp before it, and is moved past it. */
static inline enum eventfs_rb_kind eventfs_rb_step(const uint8_t *events, uint32_t size, uint32_t at,
						   uint64_t *ts, struct eventfs_rb_event *ev)
{
	uint32_t word, type_len, delta, arg;
	uint64_t end;
	if (at >= size)
		return EVENTFS_RB_END;
	if (size - at < 4)
		return EVENTFS_RB_BAD;
	memcpy(&word, events + at, 4);
	eventfs_rb_split(word, &type_len, &delta);
	if (type_len >= 1 && type_len <= 28) {
		ev->data = at + 4;
		ev->len = type_len * 4;
		ev->next = ev->data + ev->len;
		if (ev->next > size)
			return EVENTFS_RB_BAD;
		*ts += delta;
		return EVENTFS_RB_DATA;
	}
	if (type_len == EVENTFS_RB_PADDING && delta == 0)
		return EVENTFS_RB_END;
	if (size - at < 8)
		return EVENTFS_RB_BAD;
	memcpy(&arg, events + at + 4, 4);
	switch (type_len) {
	case 0:
		if (arg < 4)
			return EVENTFS_RB_BAD;
		ev->data = at + 8;
		ev->len = (arg - 4 + 3) & ~3u;
		end = (uint64_t)ev->data + ev->len;
		if (end > size)
			return EVENTFS_RB_BAD;
		ev->next = (uint32_t)end;
		*ts += delta;
		return EVENTFS_RB_DATA;
	case EVENTFS_RB_PADDING:
		end = (uint64_t)at + 4 + arg;
		if (end > size)
			return EVENTFS_RB_BAD;
		ev->next = (uint32_t)end;
		/* A discarded event keeps its delta (1 where it had none), and the
		 * next one's is from it: added, as kbuffer does (the kernel's own
		 * reader leaves it out). */
		*ts += delta;
		return EVENTFS_RB_SKIP;
	case EVENTFS_RB_TIME_EXTEND:
		ev->next = at + 8;
		*ts += ((uint64_t)arg << 27) + delta;
		return EVENTFS_RB_SKIP;
	default: /* EVENTFS_RB_TIME_STAMP */
		ev->next = at + 8;
		*ts = ((((uint64_t)arg << 27) + delta) | (*ts & EVENTFS_RB_TS_MSB));
		return EVENTFS_RB_SKIP;
	}
}

/* Counts the events from offset *at on whose header lies at or after
 * `from`; leaves *at and *ts where the walk stopped (the end of the data, or
 * a header it cannot follow). For readers that only count. */
static inline unsigned long long eventfs_rb_count(const uint8_t *events, uint32_t size, uint32_t from,
						  uint32_t *at, uint64_t *ts)
{
	unsigned long long n = 0;
	struct eventfs_rb_event ev;
	for (;; *at = ev.next) {
		enum eventfs_rb_kind k = eventfs_rb_step(events, size, *at, ts, &ev);
		if (k == EVENTFS_RB_END || k == EVENTFS_RB_BAD)
			return n;
		n += k == EVENTFS_RB_DATA && *at >= from;
	}
}

#ifdef __cplusplus
}
#endif

#endif
