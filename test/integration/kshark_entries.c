/* KernelShark's own loader (libkshark, what the kernelshark GUI draws from)
 * run on a trace.dat: one line per entry it loads, "CPU TS PID EVENT TASK",
 * in its order (time), for the tests to hold against libtracecmd's reading.
 * Exits 1 with a line on stderr when it cannot open or load the file. */
#include <stdio.h>
#include <stdlib.h>

#include <kernelshark/libkshark.h>

/* Under AddressSanitizer (the ASan build of the tests): libkshark keeps
 * some allocations of its own until the process ends, which are not this
 * program's to free. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_entry **rows = NULL;
	ssize_t n, i;
	int sd;

	if (argc != 2) {
		fprintf(stderr, "usage: kshark_entries TRACE.DAT\n");
		return 2;
	}
	if (!kshark_instance(&ctx)) {
		fprintf(stderr, "kshark_entries: no KernelShark context\n");
		return 1;
	}
	sd = kshark_open(ctx, argv[1]);
	if (sd < 0) {
		fprintf(stderr, "kshark_entries: KernelShark cannot open %s (%d)\n", argv[1], sd);
		return 1;
	}
	n = kshark_load_entries(ctx, sd, &rows);
	if (n < 0) {
		fprintf(stderr, "kshark_entries: KernelShark loads no entries from %s (%zd)\n", argv[1], n);
		return 1;
	}
	for (i = 0; i < n; ++i) {
		/* Both names are the caller's (malloc'd by the library). */
		char *event = kshark_get_event_name(rows[i]);
		char *task = kshark_get_task(rows[i]);
		printf("%d %lld %d %s %s\n", rows[i]->cpu, (long long)rows[i]->ts, rows[i]->pid,
		       event ? event : "?", task ? task : "?");
		free(event);
		free(task);
		free(rows[i]);
	}
	free(rows);
	kshark_close_all(ctx);
	kshark_free(ctx);
	return 0;
}
