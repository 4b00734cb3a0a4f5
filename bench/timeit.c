// SPDX-License-Identifier: MIT
/*
 * timeit N COMMAND [ARG...]: run COMMAND N times (fork, execvp, wait) and
 * print "median_us p90_us min_us" of the wall time, CLOCK_MONOTONIC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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
	long long *t, t0;
	int n, i, st;
	pid_t p;

	if (argc < 3 || (n = atoi(argv[1])) < 1) {
		fputs("usage: timeit N COMMAND [ARG...]\n", stderr);
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	for (i = 0; i < n; i++) {
		t0 = now_us();
		if ((p = fork()) == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "timeit: run %d failed\n", i);
			return 1;
		}
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%lld %lld %lld\n", t[n / 2], t[n * 9 / 10], t[0]);
	free(t);
	return 0;
}
