#include "support/dat_reader.h"

#include <stdlib.h>
#include <string.h>

#include <trace-cmd/trace-cmd.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

struct dat_reader {
	struct tracecmd_input *in;
	struct tep_handle *tep;
};

struct dat_reader *dat_reader_open(const char *path)
{
	struct dat_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->in = tracecmd_open(path, 0);
	if (!r->in) {
		free(r);
		return NULL;
	}
	r->tep = tracecmd_get_tep(r->in);
	return r;
}

int dat_reader_next(struct dat_reader *r, int cpu, struct dat_record *out)
{
	struct tep_record *rec = tracecmd_read_data(r->in, cpu);
	struct tep_event *e;
	struct trace_seq s;

	if (!rec)
		return 0;
	memset(out, 0, sizeof(*out));
	out->cpu = rec->cpu;
	out->ts = rec->ts;
	out->pid = tep_data_pid(r->tep, rec);
	out->missed = rec->missed_events;
	e = tep_find_event_by_record(r->tep, rec);
	if (e) {
		strncpy(out->name, e->name, sizeof(out->name) - 1);
		trace_seq_init(&s);
		tep_print_event(r->tep, &s, rec, "%s", TEP_PRINT_INFO);
		trace_seq_terminate(&s);
		strncpy(out->info, s.buffer, sizeof(out->info) - 1);
		trace_seq_destroy(&s);
	}
	tracecmd_free_record(rec);
	return 1;
}

const char *dat_reader_comm(struct dat_reader *r, int pid)
{
	return tep_data_comm_from_pid(r->tep, pid);
}

void dat_reader_close(struct dat_reader *r)
{
	if (!r)
		return;
	tracecmd_close(r->in);
	free(r);
}
