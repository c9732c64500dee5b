/* tool_usage: runs a tool and measures what every process of it costs: the
 * CPU time of the whole process tree (its own and that of every descendant,
 * orphans included: this program is their subreaper and waits for them all),
 * and the sum over the tree's processes of each one's peak RSS (VmHWM of
 * /proc/PID/status, sampled every INTERVAL ms, the last sample of a process
 * being at most INTERVAL ms before it exits; new processes of the tree are
 * looked for every 10 samples, so one that lives less long may be missed). Processes given with -p (a
 * daemon the tool talks to) are accounted too, over the tool's run: their
 * CPU time from /proc/PID/stat before and after, their VmHWM reset at the
 * start (clear_refs) and read at the end.
 *   tool_usage -o OUT [-i MS] [-t SECONDS [-s SIGNAL]] [-p PID]... -- COMMAND [ARGS]
 * -t: send SIGNAL (default SIGINT) to the tool's first process after SECONDS.
 * A SIGINT or SIGTERM this program gets is passed on to that process (which
 * then ends as it ends on Ctrl-C), and this program waits for the tree.
 * The tool's standard streams are left alone; the figures are written to
 * OUT as one line:
 *   status=S cpu_s=X rss_kb=K procs=N sampled_cpu_s=Y other_cpu_s=Z other_rss_kb=W
 * (sampled_cpu_s: the sum of the last samples of utime+stime, a cross-check
 * of cpu_s, which comes from wait4(2) and getrusage(2)). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096
#define MAX_OTHERS 8

struct proc {
	int pid;
	unsigned long long start;  /* start time: a reused pid is another process */
	unsigned long long ticks;  /* last utime + stime seen */
	long hwm_kb;               /* highest VmHWM seen */
};

static struct proc procs[MAX_PROCS];
static int nprocs;
static volatile pid_t tool;

static void pass_on(int sig)
{
	if (tool > 0)
		kill(tool, sig);
}

/* Reads /proc/PID/stat: parent, start time and utime + stime. */
static int read_stat(int pid, int *ppid, unsigned long long *start, unsigned long long *ticks)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* After the command: state(3) ppid(4) ... utime(14) stime(15) ... starttime(22). */
	unsigned long long v[20];
	char state;
	int got = sscanf(p + 2, "%c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &state, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11],
			 &v[12], &v[13], &v[14], &v[15], &v[16], &v[17], &v[18]);
	if (got < 20)
		return -1;
	*ppid = (int)v[0];
	*ticks = v[10] + v[11];
	*start = v[18];
	return 0;
}

static long read_hwm_kb(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long kb = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static struct proc *find(int pid, unsigned long long start)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].pid == pid && procs[i].start == start)
			return &procs[i];
	return NULL;
}

static int in_tree(int pid)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return 1;
	return 0;
}

/* Updates the figures of the processes known to be in the tree. */
static void sample_known(void)
{
	for (int i = 0; i < nprocs; i++) {
		int ppid;
		unsigned long long start, ticks;
		if (read_stat(procs[i].pid, &ppid, &start, &ticks) < 0 || start != procs[i].start)
			continue;
		procs[i].ticks = ticks;
		long kb = read_hwm_kb(procs[i].pid);
		if (kb > procs[i].hwm_kb)
			procs[i].hwm_kb = kb;
	}
}

/* One pass over /proc: takes in the processes whose parent is in the tree
 * (repeated while it finds new ones, so that a grandchild found before its
 * parent is taken on the next pass). */
static void find_new(void)
{
	for (int found = 1; found;) {
		found = 0;
		DIR *d = opendir("/proc");
		if (!d)
			return;
		for (struct dirent *e; (e = readdir(d));) {
			int pid = atoi(e->d_name), ppid;
			unsigned long long start, ticks;
			if (pid <= 0 || read_stat(pid, &ppid, &start, &ticks) < 0)
				continue;
			if (!find(pid, start) && in_tree(ppid) && nprocs < MAX_PROCS) {
				procs[nprocs++] = (struct proc){pid, start, ticks, 0};
				found = 1;
			}
		}
		closedir(d);
	}
}

static unsigned long long ticks_of(int pid)
{
	int ppid;
	unsigned long long start, ticks;
	return read_stat(pid, &ppid, &start, &ticks) < 0 ? 0 : ticks;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	int interval_ms = 20, sig = SIGINT, others[MAX_OTHERS], nothers = 0;
	double stop_after = 0;
	for (int opt; (opt = getopt(argc, argv, "+o:i:t:s:p:")) != -1;) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'i': interval_ms = atoi(optarg); break;
		case 't': stop_after = atof(optarg); break;
		case 's': sig = atoi(optarg); break;
		case 'p':
			if (nothers == MAX_OTHERS)
				return fprintf(stderr, "tool_usage: at most %d -p\n", MAX_OTHERS), 2;
			others[nothers++] = atoi(optarg);
			break;
		default: return 2;
		}
	}
	if (!out || optind >= argc || interval_ms <= 0 || sig <= 0 || sig >= NSIG)
		return fprintf(stderr, "usage: %s -o OUT [-i MS] [-t SECONDS [-s SIGNAL]] [-p PID]... -- COMMAND [ARGS]\n", argv[0]), 2;
	FILE *of = fopen(out, "we");
	if (!of)
		return perror(out), 1;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	unsigned long long other_before = 0;
	for (int i = 0; i < nothers; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/clear_refs", others[i]);
		FILE *f = fopen(path, "we");
		if (!f || fputs("5", f) < 0 || fclose(f) != 0)
			fprintf(stderr, "tool_usage: cannot reset the peak RSS of %d\n", others[i]);
		other_before += ticks_of(others[i]);
	}
	/* The child waits for a byte before exec, so that it is in the tree
	 * before anything it starts can be. */
	int go[2];
	if (pipe(go) < 0)
		return perror("pipe"), 1;
	pid_t child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		close(go[0]);
		/* As from a terminal, whatever the shell that started this one
		 * left ignored. */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "tool_usage: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	tool = child;
	struct sigaction sa = {0};
	sa.sa_handler = pass_on;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int ppid;
	unsigned long long start, ticks;
	if (read_stat(child, &ppid, &start, &ticks) == 0)
		procs[nprocs++] = (struct proc){child, start, 0, 0};
	if (write(go[1], "x", 1) != 1)
		return perror("pipe"), 1;
	close(go[1]);

	double t0 = now(), root_gone_at = 0;
	int status = 0, signalled = 0, root_done = 0;
	/* New processes are looked for every 10th sample (a pass over /proc
	 * costs about 1 ms with 300 processes), and in the first 10. */
	for (unsigned long tick = 0;; tick++) {
		if (tick < 10 || tick % 10 == 0)
			find_new();
		sample_known();
		/* Reap whatever ended: the tool, and its orphans, which this
		 * program is the subreaper of. */
		for (;;) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);
			if (p <= 0)
				break;
			if (p == child) {
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				root_done = 1;
				root_gone_at = now();
			}
		}
		if (root_done && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			break;
		/* Orphans left 10 s after the tool ended are killed. */
		if (root_done && now() - root_gone_at > 10)
			for (int i = 0; i < nprocs; i++) {
				int pp;
				unsigned long long st, tk;
				if (read_stat(procs[i].pid, &pp, &st, &tk) == 0 && st == procs[i].start)
					kill(procs[i].pid, SIGKILL);
			}
		if (!signalled && stop_after > 0 && now() - t0 >= stop_after) {
			kill(child, sig);
			signalled = 1;
		}
		struct timespec d = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
		nanosleep(&d, NULL);
	}

	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	long hz = sysconf(_SC_CLK_TCK), rss = 0, other_rss = 0;
	unsigned long long sampled = 0, other_after = 0;
	for (int i = 0; i < nprocs; i++) {
		rss += procs[i].hwm_kb > 0 ? procs[i].hwm_kb : 0;
		sampled += procs[i].ticks;
	}
	for (int i = 0; i < nothers; i++) {
		other_after += ticks_of(others[i]);
		long kb = read_hwm_kb(others[i]);
		other_rss += kb > 0 ? kb : 0;
	}
	fprintf(of, "status=%d cpu_s=%.3f rss_kb=%ld procs=%d sampled_cpu_s=%.3f other_cpu_s=%.3f other_rss_kb=%ld\n", status,
		cpu, rss, nprocs, (double)sampled / hz, (double)(other_after - other_before) / hz, other_rss);
	return fclose(of) == 0 ? 0 : 1;
}
