/* SPDX-License-Identifier: MIT */
/*
 * Leaf helpers shared by every module: durations, the monotonic clock, the
 * one place that writes messages, checked allocation and JSON escaping.
 * Depends on nothing else in rlock.
 */
#ifndef RLOCK_UTIL_H
#define RLOCK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <stdio.h>
#include <syslog.h>

/* Upper bound of any duration we accept: ten years, far from overflow.
 * Messages and the man page give it as DUR_MAX_TEXT. */
#define DUR_MAX_MS ((int64_t)10 * 366 * 24 * 3600 * 1000)
#define DUR_MAX_TEXT "87840h"
#define DUR_TOO_LONG (-2)

/*
 * Parse DUR: a decimal number with an optional fraction and unit (ms, s,
 * m, h; none means seconds, as in flock). Stores milliseconds, rounded up
 * so "0.0001" is not silently 0. Returns 0; -1 on junk or a sign;
 * DUR_TOO_LONG for a well-formed duration beyond DUR_MAX_MS.
 */
int dur_parse(const char *s, int64_t *ms);

/* Format a duration for humans: "850ms", "12.5s", "3m05s", "2h10m". */
void dur_format(int64_t ms, char *buf, size_t len);

/* Parse a decimal integer in [min, max] with no junk; 0 or -1. */
int int_parse(const char *s, long long min, long long max, long long *out);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t mono_ms(void);

/* Milliseconds since the epoch (CLOCK_REALTIME): the clock Redis's TIME
 * reads, for a value other hosts compare with theirs. */
int64_t wall_ms(void);

/* The smaller of two times or durations. */
int64_t min64(int64_t a, int64_t b);

/* Sleep ms milliseconds, through EINTR. */
void nap_ms(int64_t ms);

/* The longest single poll(): a longer wait polls again, so that the
 * timeout fits an int whatever the deadline. */
#define DEADLINE_POLL_MAX_MS 60000

/* Milliseconds from now until `until` (mono ms), as poll() takes them, for
 * every wait that polls: 0 once it passed, at most DEADLINE_POLL_MAX_MS. */
int deadline_poll_ms(int64_t until);

/* The longest pause between two tries of a waiter that rides out Redis's
 * weather (the contract's Weather; which failures are weather:
 * failure_retry, reply.h). */
#define RETRY_BACKOFF_MAX_MS 1000

/* The pause before try n+1 of a run of failed ones (n from 0): doubling
 * from 100 ms up to RETRY_BACKOFF_MAX_MS. */
int64_t retry_backoff_ms(int n);

enum msg_level { MSG_QUIET = -1, MSG_NORMAL = 0, MSG_VERBOSE = 1 };
extern int msg_level;

/*
 * One line, "rlock: " prefix fmt, on stderr when msg_level is at least
 * level, and with --syslog (msg_syslog_open) to syslog(3) at prio
 * (prio < 0: never) whatever -q and -v say, so a quiet cron job still
 * leaves its trace in the log. Called through the names below.
 */
void msg_line(int prio, int level, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error: shown even under -q. */
#define msg_err(...)	msg_line(LOG_ERR, MSG_QUIET, "", __VA_ARGS__)
/* A warning; -q hides it. */
#define msg_warn(...) \
	msg_line(LOG_WARNING, MSG_NORMAL, "warning: ", __VA_ARGS__)
/* A warning that -q does not hide: the lock itself may not hold (an
 * evicting server). */
#define msg_hazard(...) \
	msg_line(LOG_WARNING, MSG_QUIET, "warning: ", __VA_ARGS__)
/* -v only; never syslog. */
#define msg_verbose(...)	msg_line(-1, MSG_VERBOSE, "", __VA_ARGS__)
/* A line stderr shows unless -q, and syslog at LOG_NOTICE (a skipped
 * run). */
#define msg_notice(...)	msg_line(LOG_NOTICE, MSG_NORMAL, "", __VA_ARGS__)
/* An event of the run (acquired, released): syslog at prio, stderr only
 * under -v. */
#define msg_event(prio, ...)	msg_line(prio, MSG_VERBOSE, "", __VA_ARGS__)
/* Send these lines to syslog(3) too, ident "rlock", LOG_USER. */
void msg_syslog_open(void);
/* Has msg_syslog_open been called? */
int msg_syslog_on(void);

/*
 * Out of memory: one line, then exit 71. A holder registers a hook that
 * stops COMMAND and releases the lock first (the hook may allocate: a
 * reserve is freed for it); oom_on(NULL) removes it.
 */
void oom(void) __attribute__((noreturn));
void oom_on(void (*hook)(void));
/* Make that reserve now (an mmap), not at oom_on; oom_on(NULL) frees it. */
void oom_reserve(void);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/*
 * Write s (len bytes, any bytes) as a JSON string with quotes to f.
 * Bytes that are not valid UTF-8 become \u00XX of the byte, so output is
 * always valid JSON.
 */
void json_string(FILE *f, const char *s, size_t len);

/*
 * The length of the UTF-8 sequence at s (left bytes at most): 1 for an
 * ASCII byte, 0 when the bytes are not UTF-8 (cut short, overlong, a
 * surrogate, beyond U+10FFFF); *code its code point when not 0.
 */
size_t utf8_len(const unsigned char *s, size_t left, uint32_t *code);

/*
 * A thread's two pipes, close-on-exec and non-blocking: stop (the caller
 * tells the thread) and event (the thread tells the caller). 0; -1 with
 * errno set and every end -1. thread_pipes_close closes the ends that are
 * open and sets all four to -1.
 */
int thread_pipes_open(int stop[2], int event[2]);
void thread_pipes_close(int stop[2], int event[2]);

/* Copy s into buf as printable text: control and non-ASCII bytes as \xHH. */
void printable(const char *s, size_t len, char *buf, size_t buflen);

/* A holder's run as the busy messages word it: "pid P: CMD", and "; run
 * ended, --min-hold until HH:MM:SS" when until_ms (epoch) is past 0. */
void holder_run(char *buf, size_t buflen, const char *pid, const char *cmd,
    size_t len, int64_t until_ms);

/*
 * If $RLOCK_TRACE names a file, append "EVENT MONO_NS PID" to it: the
 * benchmark's view of grant and release instants, the torture's of when
 * a --fair waiter first had its place in the queue (queued). Costs one
 * getenv otherwise.
 */
void trace_event(const char *event);
#endif
