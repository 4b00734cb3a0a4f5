/* SPDX-License-Identifier: MIT */
/*
 * One KEY as inspect.lua returns it (struct view, whose shape
 * report_view_parse checks whole), and the helpers that read and write
 * its fields: the modules that print a view (report_view.c,
 * report_prom.c) both stand on this one.
 */
#ifndef RLOCK_VIEW_H
#define RLOCK_VIEW_H

#include <stddef.h>

#include "lua_scripts.h"
#include "reply.h"

/* Fields of a waiter or a broken holder: user, host, pid, cmd (the
 * REPLY lines of inspect.lua name the elements of its reply:
 * lua_scripts.h). */
#define VIEW_WHO_N INSPECT_WAITERS_N

/* One KEY as inspect.lua saw it; r owns the replies below. */
struct view {
	char *key;			/* argv's, or owned (list) */
	size_t keylen;
	struct reply *r;
	long long now, limit, queued;
	long long writers;		/* exclusive waiters readers wait for */
	const char *mode;	/* "mutex", "semaphore", "shared", "free" */
	const struct reply *holders, *waiters;
	const struct reply *last;	/* INSPECT_LAST_N strings, or none */
};

/* Is the KEY of v held (mutex, semaphore or shared)? */
int view_held(const struct view *v);

/*
 * Is v resting: held only by runs that have ended, which --min-hold keeps
 * holding KEY? 0 when free, or while a COMMAND runs.
 */
int view_resting(const struct view *v);

/* Has v a recorded last run (not only skips)? */
int view_has_run(const struct view *v);

/*
 * Skips counted against the grant whose fence is the string f (the
 * holder's, or the last run's); 0 when they belong to another grant.
 */
long long view_skips(const struct view *v, const struct reply *f);

/* Is r an array of n elements, strings from index `from` on? */
int view_strings(const struct reply *r, size_t n, size_t from);

/* A decimal field rlock wrote, or -1 when absent or not one. */
long long view_num(const struct reply *s);

/* Bytes for a terminal: control, C1 and non-UTF-8 bytes as \xHH, a
 * backslash doubled; never a raw tab or newline. view_put_reply: a
 * string reply's. */
void view_put_text(const char *s, size_t len);
void view_put_reply(const struct reply *s);

/*
 * Bytes on stdout as printable ASCII and UTF-8 above U+009F: a byte of
 * `quoted` after a backslash (a newline as \n), any other byte that is
 * not one of those as the text `hex` then xHH.
 */
void view_put_escaped(const char *s, size_t len, const char *quoted,
    const char *hex);

/* "user@host, pid N" (with_cmd: and ": cmd") from VIEW_WHO_N strings. */
void view_put_who(struct reply **e, int with_cmd);

#endif
