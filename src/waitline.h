/* SPDX-License-Identifier: MIT */
/*
 * The wait line: while rlock waits and stderr is a terminal, one line
 * updated in place says what we wait for, who holds it, since when, the
 * lease left, our place in the queue and how long we waited. Cleared when
 * the wait ends. Costs Redis nothing: it is redrawn from the last reply.
 * Under -v the same facts are logged instead, a line each time they change
 * (a line redrawn in place would mix with the log lines).
 */
#ifndef RLOCK_WAITLINE_H
#define RLOCK_WAITLINE_H

#include <stdint.h>

#include "lock.h"

struct waitline {
	int on;			/* stderr is a TTY, neither -q nor -v */
	int tty_known;		/* isatty asked; until then on means maybe */
	int drawn;
	int logged;		/* -v said who holds it: logged_as */
	struct lock_busy logged_as;
	const char *key;
	long limit;
	struct lock_busy last;	/* the last busy reply */
	int64_t last_at;	/* mono ms when it came */
	int64_t start;		/* mono ms when waiting began */
};

void waitline_init(struct waitline *wl, const char *key, long limit,
    int64_t start);

/* Is the line drawn at all (stderr a terminal, neither -q nor -v)? */
int waitline_on(struct waitline *wl);

/* A new busy reply arrived (under -v, logged when the holder or our
 * place in the queue changed). */
void waitline_update(struct waitline *wl, const struct lock_busy *b);

/* Redraw with the time that passed since the last reply. */
void waitline_draw(struct waitline *wl);

/* Erase the line, if drawn. */
void waitline_clear(struct waitline *wl);

#endif
