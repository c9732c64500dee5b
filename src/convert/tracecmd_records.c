#include "convert/tracecmd_records.h"

#include <stdlib.h>
#include <string.h>

#include <trace-cmd/trace-cmd.h>
#include <traceevent/event-parse.h>

struct walk {
	int swap;
	eventfs_dat_record_fn fn;
	void *data;
	uint8_t *copy;
	size_t copy_size;
	int stopped; /* what fn returned to stop the walk */
};

static void swap_bytes(uint8_t *p, unsigned size)
{
	for (unsigned i = 0; i < size / 2; ++i) {
		uint8_t t = p[i];
		p[i] = p[size - 1 - i];
		p[size - 1 - i] = t;
	}
}

static void swap_fields(struct tep_format_field **fields, uint8_t *rec, uint32_t len)
{
	for (int i = 0; fields && fields[i]; ++i) {
		struct tep_format_field *f = fields[i];
		unsigned elem = f->size, n = 1;
		if (f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_RELATIVE)) {
			elem = 4; /* the location word; its data is not swapped */
		} else if (f->flags & TEP_FIELD_IS_STRING) {
			continue;
		} else if ((f->flags & TEP_FIELD_IS_ARRAY) && f->elementsize > 0) {
			elem = (unsigned)f->elementsize;
			n = f->size / elem;
		}
		if (elem != 2 && elem != 4 && elem != 8)
			continue;
		for (unsigned k = 0; k < n; ++k)
			if ((uint64_t)f->offset + (k + 1) * elem <= len)
				swap_bytes(rec + f->offset + k * elem, elem);
	}
}

static int one(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *data)
{
	struct walk *w = data;
	struct eventfs_dat_record r;
	/* The record's own CPU: the walk's numbers CPUs across the buffers. */
	(void)cpu;
	r.cpu = rec->cpu;
	r.ts = rec->ts;
	r.missed = rec->missed_events;
	r.data = rec->data;
	r.size = (uint32_t)rec->size;
	if (w->swap) {
		struct tep_event *e = tep_find_event_by_record(tracecmd_get_tep(handle), rec);
		if (w->copy_size < r.size) {
			uint8_t *c = realloc(w->copy, r.size);
			if (!c)
				return -1;
			w->copy = c;
			w->copy_size = r.size;
		}
		memcpy(w->copy, rec->data, r.size);
		if (e) {
			struct tep_format_field **common = tep_event_common_fields(e);
			struct tep_format_field **fields = tep_event_fields(e);
			swap_fields(common, w->copy, r.size);
			swap_fields(fields, w->copy, r.size);
			free(common);
			free(fields);
		}
		r.data = w->copy;
	}
	w->stopped = w->fn(&r, w->data);
	return w->stopped;
}

int eventfs_dat_walk(const char *path, int swap, eventfs_dat_record_fn fn, void *data)
{
	struct walk w = {0};
	struct tracecmd_input *in = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	struct tracecmd_input **handles;
	int ret, n, i;
	if (!in)
		return -1;
	/* The top instance's buffer and each other instance's (trace-cmd
	 * record -B), merged in time order. */
	n = tracecmd_buffer_instances(in);
	if (n < 0)
		n = 0;
	handles = calloc((size_t)n + 1, sizeof(*handles));
	if (!handles) {
		tracecmd_close(in);
		return -1;
	}
	handles[0] = in;
	for (i = 0; i < n; ++i)
		handles[i + 1] = tracecmd_buffer_instance_handle(in, i);
	w.swap = swap;
	w.fn = fn;
	w.data = data;
	ret = 0;
	for (i = 0; i <= n; ++i)
		if (!handles[i])
			ret = -1;
	if (ret == 0)
		ret = tracecmd_iterate_events_multi(handles, n + 1, one, &w);
	for (i = 1; i <= n; ++i)
		if (handles[i])
			tracecmd_close(handles[i]);
	free(handles);
	tracecmd_close(in);
	free(w.copy);
	if (w.stopped)
		return w.stopped;
	return ret < 0 ? -1 : 0;
}
