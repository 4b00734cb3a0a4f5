// SPDX-License-Identifier: MIT
/*
 * section LOG HOLD_MS TAG: a critical section for the benchmark. Appends
 * "start NS TAG" and, HOLD_MS later, "end NS TAG" (CLOCK_MONOTONIC, shared
 * by every process on the machine) to LOG.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
stamp(int fd, const char *what, const char *tag)
{
	struct timespec ts;
	char line[128];
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%s %lld%09ld %s\n", what,
	    (long long)ts.tv_sec, ts.tv_nsec, tag);
	if (write(fd, line, (size_t)n) != n)
		exit(1);
}

int
main(int argc, char **argv)
{
	struct timespec hold;
	long ms;
	int fd;

	if (argc != 4) {
		fputs("usage: section LOG HOLD_MS TAG\n", stderr);
		return 2;
	}
	if ((fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644)) < 0)
		return 1;
	ms = strtol(argv[2], NULL, 10);
	stamp(fd, "start", argv[3]);
	hold.tv_sec = ms / 1000;
	hold.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&hold, NULL);
	stamp(fd, "end", argv[3]);
	return 0;
}
