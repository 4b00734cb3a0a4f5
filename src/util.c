// SPDX-License-Identifier: MIT
/*
 * Leaf helpers: durations, clock, messages, allocation, escaping. Nothing
 * here knows about Redis or locks; everything here is safe to unit-test.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "exitcode.h"

int msg_level = MSG_NORMAL;

/*
 * Decimal digits at *p, refused past limit. The test is exact, so every
 * value up to limit parses (INT64_MAX itself too); limit may be 2^63, the
 * size of INT64_MIN, which no int64_t holds.
 */
static int
parse_digits(const char **p, uint64_t limit, uint64_t *val, int *ndigits)
{
	uint64_t v = 0, d;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		d = (uint64_t)(**p - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
		(*p)++;
		n++;
	}
	*val = v;
	*ndigits = n;
	return 0;
}

int
dur_parse(const char *s, int64_t *ms)
{
	const char *p = s;
	int64_t frac = 0, scale = 1000, fscale = 1, out;
	uint64_t whole = 0;
	int nw = 0, nf = 0, big = 0;

	if (parse_digits(&p, INT64_MAX, &whole, &nw) < 0) {
		/* Well-formed but huge: "too long", not "invalid". */
		big = 1;
		while (*p >= '0' && *p <= '9')
			p++, nw++;
	}
	if (*p == '.') {
		p++;
		/* "1." and "." are typos more likely than durations. */
		if (*p < '0' || *p > '9')
			return -1;
		/* Only the digits that matter at 1 ms resolution count. */
		while (*p >= '0' && *p <= '9') {
			if (nf < 9) {
				frac = frac * 10 + (*p - '0');
				fscale *= 10;
			} else if (*p != '0' && frac % 10 == 0) {
				frac += 1;	/* keep "rounds up" for 1e-10 */
			}
			p++;
			nf++;
		}
	}
	if (nw + nf == 0)
		return -1;
	/* No unit: seconds, scale's first value. */
	if (strcmp(p, "ms") == 0)
		scale = 1;
	else if (strcmp(p, "m") == 0)
		scale = 60 * 1000;
	else if (strcmp(p, "h") == 0)
		scale = 3600 * 1000;
	else if (*p != '\0' && strcmp(p, "s") != 0)
		return -1;
	if (big || whole > (uint64_t)(DUR_MAX_MS / scale))
		return DUR_TOO_LONG;
	out = (int64_t)whole * scale;
	/* frac/fscale of a unit, in ms, rounded up. */
	out += (frac * scale + fscale - 1) / fscale;
	if (out > DUR_MAX_MS)
		return DUR_TOO_LONG;
	*ms = out;
	return 0;
}

void
dur_format(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else if (ms < 60 * 1000)
		snprintf(buf, len, "%lld.%llds", (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	else if (ms < 3600 * 1000)
		snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
		    (long long)(ms / 1000 % 60));
	else
		snprintf(buf, len, "%lldh%02lldm", (long long)(ms / 3600000),
		    (long long)(ms / 60000 % 60));
}

int
int_parse(const char *s, long long min, long long max, long long *out)
{
	const char *p = s;
	uint64_t u;
	int64_t v;
	int n, neg = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (parse_digits(&p, neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &u,
	    &n) < 0 || n == 0 || *p != '\0')
		return -1;
	/* -(u - 1) - 1, not -u: u may be 2^63. */
	v = neg && u > 0 ? -(int64_t)(u - 1) - 1 : (int64_t)u;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

void
nap_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

int
deadline_poll_ms(int64_t until)
{
	int64_t left = until - mono_ms();

	if (left <= 0)
		return 0;
	return (int)(left > DEADLINE_POLL_MAX_MS ? DEADLINE_POLL_MAX_MS :
	    left);
}

int64_t
retry_backoff_ms(int n)
{
	int64_t ms = 100;

	while (n-- > 0 && ms < RETRY_BACKOFF_MAX_MS)
		ms *= 2;
	return ms < RETRY_BACKOFF_MAX_MS ? ms : RETRY_BACKOFF_MAX_MS;
}

static int to_syslog;

void
msg_syslog_open(void)
{
	/* LOG_NDELAY: connect now, so a COMMAND forked later never owns
	 * the first connection to /dev/log (glibc sets close-on-exec). */
	if (!to_syslog)
		openlog("rlock", LOG_PID | LOG_NDELAY, LOG_USER);
	to_syslog = 1;
}

int
msg_syslog_on(void)
{
	return to_syslog;
}

void
msg_line(int prio, int level, const char *prefix, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n, show = msg_level >= level;

	if (!show && (prio < 0 || !to_syslog))
		return;
	/* One write(2)-sized line so parallel rlocks do not interleave. */
	n = snprintf(line, sizeof(line), "rlock: %s", prefix);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (prio >= 0 && to_syslog)
		syslog(prio, "%s%s", prefix, line + n);
	if (!show)
		return;
	strcat(line, "\n");
	fputs(line, stderr);
	fflush(stderr);
}

static void (*oom_hook)(void);
static void *oom_room;
/* Threads that run out of memory together (the renewal thread, --redlock's
 * connects) must not each run the hook, nor end the process while one
 * runs it: the first ends the run, the others wait for its _exit. */
static atomic_int oom_taken;
static _Thread_local int oom_mine;

void
oom_reserve(void)
{
	/* Room for the hook's own allocations once malloc fails. */
	if (oom_room == NULL)
		oom_room = malloc(256 * 1024);
}

void
oom_on(void (*hook)(void))
{
	if (hook != NULL)
		oom_reserve();
	if (hook == NULL) {
		free(oom_room);
		oom_room = NULL;
	}
	oom_hook = hook;
}

void
oom(void)
{
	static const char m[] = "rlock: out of memory\n";
	void (*hook)(void);

	/* The hook itself out of memory again: end here. */
	if (oom_mine)
		_exit(RL_EXIT_OSERR);
	if (atomic_exchange(&oom_taken, 1))
		for (;;)
			pause();
	oom_mine = 1;
	hook = oom_hook;
	(void)!write(STDERR_FILENO, m, sizeof(m) - 1);
	oom_hook = NULL;
	free(oom_room);
	oom_room = NULL;
	if (hook != NULL)
		hook();
	_exit(RL_EXIT_OSERR);
}

void *
xmalloc(size_t n)
{
	return xrealloc(NULL, n);
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom();
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	if ((p = realloc(p, n ? n : 1)) == NULL)
		oom();
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

size_t
utf8_len(const unsigned char *s, size_t left, uint32_t *code)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80) {
		*code = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	*code = cp;
	return n;
}

void
json_string(FILE *f, const char *s, size_t len)
{
	/* The escapes JSON has a letter for, and those letters. */
	static const char named[] = "\"\\\n\t\r", letter[] = "\"\\ntr";
	const unsigned char *u = (const unsigned char *)s;
	const char *e;
	size_t i = 0, n;
	uint32_t cp;

	fputc('"', f);
	while (i < len) {
		unsigned char c = u[i];

		if (c != '\0' && (e = strchr(named, c)) != NULL) {
			fprintf(f, "\\%c", letter[e - named]);
		} else if (c < 0x20 || c == 0x7f ||
		    (n = utf8_len(u + i, len - i, &cp)) == 0) {
			fprintf(f, "\\u%04x", c);
		} else {
			fwrite(u + i, 1, n, f);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

void
printable(const char *s, size_t len, char *buf, size_t buflen)
{
	size_t i, o = 0, need = 0, room;

	if (buflen == 0)
		return;
	for (i = 0; i < len && need < buflen; i++) {
		unsigned char c = (unsigned char)s[i];

		need += c >= 0x20 && c < 0x7f ? 1 : 4;
	}
	/* A cut must show: when s does not fit, keep room for "...". */
	room = buflen - 1;
	if (need > room)
		room = room >= 3 ? room - 3 : room;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t w = c >= 0x20 && c < 0x7f ? 1 : 4;

		if (o + w > room)
			break;
		if (w == 1)
			buf[o] = (char)c;
		else
			snprintf(buf + o, buflen - o, "\\x%02x", c);
		o += w;
	}
	if (i < len && o + 3 < buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

void
holder_run(char *buf, size_t buflen, const char *pid, const char *cmd,
    size_t len, int64_t until_ms)
{
	char pcmd[80], until[48] = "";
	time_t t = (time_t)(until_ms / 1000);
	struct tm tm;

	printable(cmd, len, pcmd, sizeof(pcmd));
	if (t > 0 && localtime_r(&t, &tm) != NULL)
		strftime(until, sizeof(until), "; run ended, --min-hold until "
		    "%H:%M:%S", &tm);
	snprintf(buf, buflen, "pid %s: %s%s", pid, pcmd, until);
}

void
trace_event(const char *event)
{
	const char *path = getenv("RLOCK_TRACE");
	struct timespec ts;
	char line[96];
	int fd, n;

	if (path == NULL || *path == '\0')
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%s %lld%09ld %ld\n", event,
	    (long long)ts.tv_sec, ts.tv_nsec, (long)getpid());
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0644)) < 0)
		return;
	(void)!write(fd, line, (size_t)n);
	close(fd);
}

void
thread_pipes_close(int stop[2], int event[2])
{
	int i;

	for (i = 0; i < 2; i++) {
		if (stop[i] >= 0)
			close(stop[i]);
		if (event[i] >= 0)
			close(event[i]);
		stop[i] = event[i] = -1;
	}
}

int
thread_pipes_open(int stop[2], int event[2])
{
	int e;

	stop[0] = stop[1] = event[0] = event[1] = -1;
	if (pipe2(stop, O_CLOEXEC | O_NONBLOCK) == 0 &&
	    pipe2(event, O_CLOEXEC | O_NONBLOCK) == 0)
		return 0;
	e = errno;
	thread_pipes_close(stop, event);
	errno = e;
	return -1;
}
