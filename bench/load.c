// SPDX-License-Identifier: MIT
/*
 * load MS CLIENTS CMD [ARG...]: CLIENTS processes, each running CMD again
 * and again (fork, execvp, wait) for MS milliseconds; "%d" in an ARG is
 * replaced by the client's number (distinct keys). Prints "CYCLES FAILED
 * WALL_US": the runs that exited 0, those that did not, and the time from
 * the start to the last client's end. A run still going at the deadline
 * is finished and counted, so WALL_US, not MS, is the divisor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static char **
client_argv(char **cmd, int argc, int id)
{
	char **v = calloc((size_t)argc + 1, sizeof(*v));
	int i;

	for (i = 0; v && i < argc; i++) {
		const char *at = strstr(cmd[i], "%d");
		size_t n = strlen(cmd[i]) + 16;

		if (at == NULL) {
			v[i] = cmd[i];
			continue;
		}
		if ((v[i] = malloc(n)) == NULL)
			return NULL;
		snprintf(v[i], n, "%.*s%d%s", (int)(at - cmd[i]), cmd[i], id,
		    at + 2);
	}
	return v;
}

static void
client(char **argv, long long end, long *counts)
{
	pid_t p;
	int st;

	while (now_us() < end) {
		if ((p = fork()) == 0) {
			execvp(argv[0], argv);
			_exit(127);
		}
		if (p < 0 || waitpid(p, &st, 0) < 0)
			_exit(1);
		__atomic_add_fetch(&counts[WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0 ? 0 : 1], 1, __ATOMIC_RELAXED);
	}
	_exit(0);
}

int
main(int argc, char **argv)
{
	long long t0, end;
	long *counts;
	char **v;
	int ms, n, i;

	if (argc < 4 || (ms = atoi(argv[1])) < 1 || (n = atoi(argv[2])) < 1) {
		fputs("usage: load MS CLIENTS CMD [ARG...]\n", stderr);
		return 2;
	}
	counts = mmap(NULL, 2 * sizeof(long), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED)
		return 1;
	t0 = now_us();
	end = t0 + (long long)ms * 1000;
	for (i = 0; i < n; i++) {
		if ((v = client_argv(argv + 3, argc - 3, i)) == NULL)
			return 1;
		if (fork() == 0)
			client(v, end, counts);
	}
	while (wait(NULL) > 0)
		;
	printf("%ld %ld %lld\n", counts[0], counts[1], now_us() - t0);
	return 0;
}
