// SPDX-License-Identifier: MIT
/*
 * fork N: the machine's price of a new process, as the benchmark's floor
 * for the watcher rlock forks between a grant and COMMAND (the contract:
 * a run that does not get the lock forks nothing, and the guard holds
 * from COMMAND's first instruction). Prints the p50 and p90, in us, of
 * fork(2) as a small single-threaded caller sees it (the call to its
 * return in the parent), N times, 2 ms apart as hand-offs come, the child
 * exiting at once and reaped between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	struct timespec gap = { 0, 2000000 };
	long long *us, t0;
	int n, i;
	pid_t p;

	if (argc != 2 || (n = atoi(argv[1])) < 1) {
		fputs("usage: fork N\n", stderr);
		return 2;
	}
	if ((us = calloc((size_t)n, sizeof(*us))) == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		nanosleep(&gap, NULL);
		t0 = now_ns();
		if ((p = fork()) == 0)
			_exit(0);
		us[i] = (now_ns() - t0) / 1000;
		if (p < 0 || waitpid(p, NULL, 0) != p)
			return 1;
	}
	qsort(us, (size_t)n, sizeof(*us), cmp);
	printf("%lld %lld\n", us[n / 2], us[n * 9 / 10]);
	free(us);
	return 0;
}
