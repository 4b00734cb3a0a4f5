// SPDX-License-Identifier: MIT
/*
 * stamp: the torture runs' clock. Every line it appends to LOG is
 *
 *	EVENT NS FENCE ID [ARG]
 *
 * with NS from CLOCK_MONOTONIC (one machine, one clock for everybody),
 * FENCE from $RLOCK_FENCE and ID from $TORTURE_ID ("-" when unset). One
 * write(2) per line on an O_APPEND descriptor, so lines from many
 * processes never mix.
 *
 *	stamp LOG EVENT [ARG]		one event (exit, fault, frozen, ...)
 *	stamp LOG section MS [-i]	a critical section of MS milliseconds
 *
 * A section writes `start`, sleeps, writes `end`. SIGTERM (rlock's
 * --on-lost, or the kernel's PDEATHSIG when rlock dies) is recorded at
 * once from the handler as `told`; the section then ends (`end`, status
 * 143), or with -i goes on as a command that ignores SIGTERM would,
 * until SIGKILL. Because a SIGKILLed process writes nothing, a watcher
 * child holds the read end of a pipe whose write end only the section
 * holds, and writes `gone` when the kernel closes it: the moment the
 * section stopped running, whatever ended it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int logfd = -1;
static const char *fence = "-", *id = "-";
static volatile sig_atomic_t ignore_term;

/* Append s to line at *n, keeping room for the newline. */
static void
add(char *line, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap - 1)
		line[(*n)++] = *s++;
}

/* Async-signal-safe: only clock_gettime, hand formatting and write. */
static void
put_event(const char *ev, const char *arg)
{
	char line[512], num[24], *p = num + sizeof(num) - 1;
	struct timespec ts;
	unsigned long long ns;
	size_t n = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (unsigned long long)ts.tv_sec * 1000000000ULL +
	    (unsigned long long)ts.tv_nsec;
	*p = '\0';
	do
		*--p = (char)('0' + ns % 10);
	while ((ns /= 10) != 0);
	add(line, &n, sizeof(line), ev);
	add(line, &n, sizeof(line), " ");
	add(line, &n, sizeof(line), p);
	add(line, &n, sizeof(line), " ");
	add(line, &n, sizeof(line), fence);
	add(line, &n, sizeof(line), " ");
	add(line, &n, sizeof(line), id);
	if (arg) {
		add(line, &n, sizeof(line), " ");
		add(line, &n, sizeof(line), arg);
	}
	line[n++] = '\n';
	(void)!write(logfd, line, n);
}

static void
on_term(int sig)
{
	(void)sig;
	put_event("told", NULL);
	if (ignore_term)
		return;
	put_event("end", "143");
	_exit(143);
}

/* The watcher: `gone` when the section's end of the pipe closes. */
static void
watch(int rfd)
{
	char b;
	ssize_t n;

	do
		n = read(rfd, &b, 1);
	while (n < 0 && errno == EINTR);
	put_event("gone", NULL);
	_exit(0);
}

static int
section(long ms, int ign)
{
	struct sigaction sa;
	struct timespec until;
	int p[2];
	pid_t w;

	if (pipe(p) < 0)
		return 1;
	if ((w = fork()) < 0)
		return 1;
	if (w == 0) {
		close(p[1]);
		/* Not in rlock's way: rlock waits for the section only. */
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		watch(p[0]);
	}
	close(p[0]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	ignore_term = ign;
	sigaction(SIGTERM, &sa, NULL);
	put_event("start", NULL);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until,
	    NULL) == EINTR)
		;
	put_event("end", "0");
	return 0;
}

int
main(int argc, char **argv)
{
	const char *e;

	if (argc < 3) {
		fprintf(stderr, "usage: stamp LOG EVENT [ARG] | "
		    "stamp LOG section MS [-i]\n");
		return 2;
	}
	if ((e = getenv("RLOCK_FENCE")) != NULL && *e)
		fence = e;
	if ((e = getenv("TORTURE_ID")) != NULL && *e)
		id = e;
	logfd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (logfd < 0) {
		perror(argv[1]);
		return 2;
	}
	if (strcmp(argv[2], "section") == 0 && argc >= 4)
		return section(strtol(argv[3], NULL, 10),
		    argc >= 5 && strcmp(argv[4], "-i") == 0);
	put_event(argv[2], argc >= 4 ? argv[3] : NULL);
	return 0;
}
