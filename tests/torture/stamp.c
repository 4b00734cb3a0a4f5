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
 *	stamp LOG incr FILE MS [-i]	a section that reads the integer in
 *					FILE, sleeps MS, writes it back + 1
 *
 * A section writes `start`, sleeps, writes `end`. SIGTERM (rlock's
 * --on-lost, or the kernel's PDEATHSIG when rlock dies) is recorded at
 * once from the handler as `told`; the section then ends (`end`, status
 * 143), or with -i goes on as a command that ignores SIGTERM would,
 * until SIGKILL. Because a SIGKILLed process writes nothing, a watcher
 * child holds the read end of a pipe whose write end only the section
 * holds, and writes `gone` when the kernel closes it: the moment the
 * section stopped running, whatever ended it.
 *
 * incr is the read-increment-write of tests/mx.sh: two sections that
 * overlap lose an update, which the final count shows even if the
 * clock did not. `end 0` is written only with the new value in place
 * (rename), and SIGTERM is held off between the two, so the `end 0`
 * lines count the increments exactly; a section stopped before that
 * writes nothing.
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

/* The integer in path (0 if there is no file yet), or -1. */
static long long
read_count(const char *path)
{
	char buf[32], *end;
	long long v;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v < 0)
		return -1;
	return v;
}

/* Replace path by v, atomically: a section killed mid-way leaves the old
 * value, never a torn one. */
static int
write_count(const char *path, long long v)
{
	char tmp[4096], buf[32];
	int fd, n, ok;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid()) >=
	    (int)sizeof(tmp))
		return -1;
	n = snprintf(buf, sizeof(buf), "%lld\n", v);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) < 0)
		return -1;
	ok = write(fd, buf, (size_t)n) == n;
	if (close(fd) < 0 || !ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int
section(long ms, int ign, const char *count)
{
	struct sigaction sa;
	struct timespec until;
	sigset_t term, old;
	long long v = 0;
	int p[2];
	pid_t w;

	if (pipe(p) < 0)
		return 1;
	if ((w = fork()) < 0)
		return 1;
	if (w == 0) {
		close(p[1]);
		/* rlock signals COMMAND's whole process group, its SIGKILL
		 * too: in the section's group the watcher died with it and
		 * a SIGKILLed section left no trace (c2: "unterminated"). */
		setpgid(0, 0);
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
	if (count && (v = read_count(count)) < 0) {
		fprintf(stderr, "stamp: %s: not a count\n", count);
		put_event("end", "2");
		return 2;
	}
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
	if (!count) {
		put_event("end", "0");
		return 0;
	}
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	if (write_count(count, v + 1) < 0) {
		perror(count);
		put_event("end", "2");
		return 2;
	}
	put_event("end", "0");
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *e;

	if (argc < 3) {
		fprintf(stderr, "usage: stamp LOG EVENT [ARG] | "
		    "stamp LOG section MS [-i] | stamp LOG incr FILE MS [-i]\n");
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
		    argc >= 5 && strcmp(argv[4], "-i") == 0, NULL);
	if (strcmp(argv[2], "incr") == 0 && argc >= 5)
		return section(strtol(argv[4], NULL, 10),
		    argc >= 6 && strcmp(argv[5], "-i") == 0, argv[3]);
	put_event(argv[2], argc >= 4 ? argv[3] : NULL);
	return 0;
}
