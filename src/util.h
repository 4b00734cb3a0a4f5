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

/* Sleep ms milliseconds, through EINTR. */
void nap_ms(int64_t ms);


enum msg_level { MSG_QUIET = -1, MSG_NORMAL = 0, MSG_VERBOSE = 1 };
extern int msg_level;

/* "rlock: ..." on stderr, one line; warnings hide under -q. */
void msg_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * With --syslog (msg_syslog_open), errors and warnings also go to
 * syslog(3), -q or not; verbose lines never do. msg_notice: a line stderr
 * shows unless -q, and syslog at LOG_NOTICE (a skipped run).
 */
void msg_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A warning that -q does not hide: the lock itself may not hold (an
 * evicting server). Syslog at LOG_WARNING, as any warning. */
void msg_hazard(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An event of the run (acquired, released): syslog at prio, stderr
 * only under -v. */
void msg_event(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
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




/*
 * If $RLOCK_TRACE names a file, append "EVENT MONO_NS PID" to it: the
 * benchmark's view of grant and release instants, the torture's of when
 * a --fair waiter first had its place in the queue (queued). Costs one
 * getenv otherwise.
 */
void trace_event(const char *event);
#endif
