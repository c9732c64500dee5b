/* pingpong: a sched ping-pong pinned on every CPU, for a number of seconds:
 * on each CPU, two threads pinned to it pass a byte back and forth through
 * two pipes, so that every round trip is two context switches and two
 * wake-ups on that CPU. With BUSY=1, one more thread per CPU, pinned to it,
 * spins at the same (normal) priority: background load the ping-pong
 * competes with.
 *   pingpong SECONDS [BUSY]
 * Prints "round_trips=N" (all CPUs). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

struct pair {
	int cpu;
	int to_b[2], to_a[2];
	unsigned long round_trips;
};

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
		fprintf(stderr, "pingpong: cannot pin a thread to CPU %d\n", cpu);
}

/* A: sends the token and waits for it back, until told to stop; then
 * closes its end, which ends B. */
static void *side_a(void *arg)
{
	struct pair *p = arg;
	char c = 0;
	pin(p->cpu);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (write(p->to_b[1], &c, 1) != 1 || read(p->to_a[0], &c, 1) != 1)
			break;
		p->round_trips++;
	}
	close(p->to_b[1]);
	return NULL;
}

/* B: returns every token until A's end is closed. */
static void *side_b(void *arg)
{
	struct pair *p = arg;
	char c;
	pin(p->cpu);
	while (read(p->to_b[0], &c, 1) == 1)
		if (write(p->to_a[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *spin(void *arg)
{
	pin((int)(long)arg);
	volatile unsigned long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		n++;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || atof(argv[1]) <= 0)
		return fprintf(stderr, "usage: %s SECONDS [BUSY]\n", argv[0]), 2;
	double secs = atof(argv[1]);
	int busy = argc > 2 && atoi(argv[2]) != 0;
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct pair *pairs = calloc((size_t)cpus, sizeof *pairs);
	pthread_t *threads = calloc((size_t)cpus * 3, sizeof *threads);
	if (!pairs || !threads)
		return perror("pingpong"), 1;
	int n = 0;
	for (int c = 0; c < cpus; c++) {
		pairs[c].cpu = c;
		if (pipe(pairs[c].to_b) || pipe(pairs[c].to_a))
			return perror("pipe"), 1;
		pthread_create(&threads[n++], NULL, side_b, &pairs[c]);
		pthread_create(&threads[n++], NULL, side_a, &pairs[c]);
		if (busy)
			pthread_create(&threads[n++], NULL, spin, (void *)(long)c);
	}
	struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	unsigned long total = 0;
	for (int c = 0; c < cpus; c++)
		total += pairs[c].round_trips;
	printf("round_trips=%lu\n", total);
	return 0;
}
