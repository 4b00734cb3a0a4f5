// SPDX-License-Identifier: MIT
/*
 * rounds N CMD [ARG...] [::: CMD [ARG...]]...: N rounds; each round runs
 * every CMD once (fork, execvp, wait), in an order that rotates from round
 * to round, so a busy moment of a shared machine hits every column alike.
 * Prints one line per round: the wall time of each CMD in microseconds
 * (CLOCK_MONOTONIC), in the order given. A CMD that fails stops it: a
 * figure of a run that did not do its work would be a lie. The commands'
 * stdout goes to /dev/null, so only the figures are on ours.
 *
 * -p SO: each command runs with LD_PRELOAD=SO and BENCH_T0, the
 * CLOCK_MONOTONIC nanosecond when it was forked (bench/phases.c).
 * -u PREFIX: also writes PREFIX.cpu and PREFIX.flt, shaped as the output:
 * each run's CPU time (user + system, us) and minor page faults, its
 * children's included (wait4). On a busy machine they move less than the
 * wall time, which waits for a CPU too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXCMD 8

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *preload;

struct use {
	long long cpu_us;
	long flt;
};

static long long
run(char **argv, struct use *u)
{
	struct rusage ru;
	long long t0 = now_ns();
	char t0s[32];
	pid_t p;
	int st;

	if ((p = fork()) == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		close(fd);
		if (preload) {
			snprintf(t0s, sizeof(t0s), "%lld", t0);
			setenv("BENCH_T0", t0s, 1);
			setenv("LD_PRELOAD", preload, 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (p < 0 || wait4(p, &st, 0, &ru) < 0)
		return -1;
	u->cpu_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
	    1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	u->flt = ru.ru_minflt;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "rounds: %s: status %d\n", argv[0],
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -1;
	}
	return now_ns() - t0;
}

int
main(int argc, char **argv)
{
	char **cmd[MAXCMD], path[4096];
	long long t[MAXCMD];
	struct use u[MAXCMD];
	FILE *cpu = NULL, *flt = NULL;
	int n, ncmd = 0, i, r, k;

	while (argc > 2 && argv[1][0] == '-' && argv[1][2] == '\0') {
		if (argv[1][1] == 'p') {
			preload = argv[2];
		} else if (argv[1][1] == 'u') {
			snprintf(path, sizeof(path), "%s.cpu", argv[2]);
			cpu = fopen(path, "w");
			snprintf(path, sizeof(path), "%s.flt", argv[2]);
			flt = fopen(path, "w");
			if (cpu == NULL || flt == NULL) {
				perror("rounds");
				return 1;
			}
		} else {
			break;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc < 3 || (n = atoi(argv[1])) < 1) {
		fputs("usage: rounds [-p SO] [-u PREFIX] N CMD [ARG...] [::: CMD [ARG...]]...\n",
		    stderr);
		return 2;
	}
	cmd[ncmd++] = argv + 2;
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], ":::") != 0)
			continue;
		argv[i] = NULL;
		if (ncmd == MAXCMD || i + 1 == argc) {
			fputs("rounds: too many or empty commands\n", stderr);
			return 2;
		}
		cmd[ncmd++] = argv + i + 1;
	}
	for (r = 0; r < n; r++) {
		for (k = 0; k < ncmd; k++) {
			i = (r + k) % ncmd;
			if ((t[i] = run(cmd[i], &u[i])) < 0)
				return 1;
		}
		for (i = 0; i < ncmd; i++) {
			printf("%s%lld", i ? " " : "", t[i] / 1000);
			if (cpu)
				fprintf(cpu, "%s%lld", i ? " " : "", u[i].cpu_us);
			if (flt)
				fprintf(flt, "%s%ld", i ? " " : "", u[i].flt);
		}
		putchar('\n');
		if (cpu) {
			fputc('\n', cpu);
			fputc('\n', flt);
		}
	}
	if (cpu && (fclose(cpu) != 0 || fclose(flt) != 0))
		return 1;
	return fflush(stdout) == 0 ? 0 : 1;
}
