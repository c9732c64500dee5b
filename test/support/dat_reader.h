/* A trace.dat read through libtracecmd's installed read API, record by
 * record as trace-cmd report prints them (libtraceevent's INFO text). C,
 * as trace-cmd.h includes tracefs.h, which does not compile as C++. */
#ifndef EVENTFS_TEST_DAT_READER_H
#define EVENTFS_TEST_DAT_READER_H

#ifdef __cplusplus
extern "C" {
#endif

struct dat_record {
	int cpu;
	unsigned long long ts;
	int pid;
	long long missed; /* events lost before it (the page's mark) */
	char name[64];    /* the event's name; empty when its id is unknown */
	char info[1024];  /* its fields as the format's print fmt prints them */
};

struct dat_reader;

/* NULL when libtracecmd cannot open it. */
struct dat_reader *dat_reader_open(const char *path);
/* The next record of `cpu`: 1, or 0 at its end. */
int dat_reader_next(struct dat_reader *r, int cpu, struct dat_record *out);
/* The task name the file's saved cmdlines give `pid` ("<...>" if none). */
const char *dat_reader_comm(struct dat_reader *r, int pid);
void dat_reader_close(struct dat_reader *r);

#ifdef __cplusplus
}
#endif

#endif
