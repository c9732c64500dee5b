/* Compiled as C: include/eventfs/record.h must be valid C99 on its own. */
#include "eventfs/record.h"

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L
#error "expected a C99 (or later) compiler"
#endif

int eventfs_record_h_c99_check(void);

int eventfs_record_h_c99_check(void)
{
	uint64_t storage[8] = {0};
	struct eventfs_record_header *h = (struct eventfs_record_header *)storage;
	struct eventfs_lost *l;
	h->size = EVENTFS_RECORD_SIZE(sizeof(struct eventfs_lost));
	h->id = EVENTFS_ID_LOST;
	h->version = EVENTFS_RECORD_VERSION;
	l = (struct eventfs_lost *)((char *)h + sizeof *h);
	l->count = 5;
	l->flags = EVENTFS_LOST_COUNT_UNKNOWN;
	if (sizeof(struct eventfs_record_header) != 24 || sizeof(struct eventfs_lost) != 16)
		return 1;
	if (h->size != 40 || eventfs_record_check(h, sizeof storage) != 40)
		return 2;
	if (((const struct eventfs_lost *)EVENTFS_RECORD_PAYLOAD(h))->count != 5)
		return 3;
	if (EVENTFS_RECORD_ROUND(44) != 48 || EVENTFS_RECORD_SIZE(44) != 72)
		return 4;
	h->version = 0; /* another framing: refused */
	if (eventfs_record_check(h, sizeof storage) != 0)
		return 5;
	return 0;
}
