// SPDX-License-Identifier: MIT
/* The in-place wait line; see waitline.h. */
#include "waitline.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void
waitline_init(struct waitline *wl, const char *key, long limit,
    int64_t start)
{
	memset(wl, 0, sizeof(*wl));
	/* Whether stderr is a TTY is asked on the first draw: a lock that
	 * is free at once never needs the answer (a system call). Until
	 * then "on" means "may be". Under -v the log says it instead. */
	wl->on = msg_level == MSG_NORMAL;
	wl->key = key;
	wl->limit = limit;
	wl->start = start;
}

static void
ordinal(long long n, char *buf, size_t len)
{
	const char *sfx = "th";

	if (n % 100 < 11 || n % 100 > 13)
		sfx = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" :
		    n % 10 == 3 ? "rd" : "th";
	snprintf(buf, len, "%lld%s", n, sfx);
}

/* "held by u@h (pid N: cmd) for 2m03s, lease 25.0s left; 3rd in queue" */
static void
describe(const struct waitline *wl, int64_t since_reply, char *buf,
    size_t len)
{
	const struct lock_busy *b = &wl->last;
	char who[700], held[32], left[32], pos[64] = "", cmd[64], nth[24];
	char until[16];
	int64_t lease_left = b->lease_left_ms - since_reply;
	time_t t = (time_t)((b->now_ms + b->lease_left_ms) / 1000);
	struct tm tm;

	printable(b->cmd, strlen(b->cmd), cmd, sizeof(cmd));
	if (b->lease_left_ms == -1)
		snprintf(left, sizeof(left), "no expiry");
	else
		dur_format(lease_left, left, sizeof(left));
	if (b->position >= 0) {
		ordinal(b->position + 1, nth, sizeof(nth));
		snprintf(pos, sizeof(pos), "; %s in queue", nth);
	}
	/*
	 * The holder's run ended and only its --min-hold window keeps KEY:
	 * say so, and until when (the server's clock, shown in local time),
	 * rather than call the window a lease.
	 */
	if (b->user[0] && b->ended_ms > 0 && b->lease_left_ms >= 0 &&
	    wl->limit <= 1) {
		dur_format(b->now_ms - b->ended_ms + since_reply, held,
		    sizeof(held));
		if (localtime_r(&t, &tm) == NULL ||
		    strftime(until, sizeof(until), "%H:%M:%S", &tm) == 0)
			snprintf(until, sizeof(until), "its end");
		snprintf(buf, len, "held by %s@%s (pid %s: %s; run ended %s "
		    "ago), --min-hold until %s, %s left%s", b->user, b->host,
		    b->pid, cmd, held, until, left, pos);
		return;
	}
	if (b->user[0]) {
		dur_format(b->now_ms - b->since_ms + since_reply, held,
		    sizeof(held));
		snprintf(who, sizeof(who), "held by %s@%s (pid %s: %s) for %s",
		    b->user, b->host, b->pid, cmd, held);
	} else if (wl->limit > 1) {
		snprintf(who, sizeof(who), "all %ld slots taken", wl->limit);
	} else if (b->foreign) {
		snprintf(who, sizeof(who), "held by a client other than rlock");
	} else {
		snprintf(who, sizeof(who), "held by another client");
	}
	/* Free, but not for us: a --fair waiter ahead takes its turn (or,
	 * --redlock, nobody got a majority). */
	if (b->lease_left_ms < -1) {
		snprintf(buf, len, "%s%s", b->position >= 0 ? "free, the turn "
		    "of the --fair waiter ahead" : "free, trying again", pos);
		return;
	}
	snprintf(buf, len, "%s, %s %s%s%s", who, wl->limit > 1 ?
	    "next slot free in" : "lease", left, b->lease_left_ms < 0 ? "" :
	    wl->limit > 1 ? "" : " left", pos);
}

/* The same holder (and place) as the last line logged? */
static int
same_holder(const struct lock_busy *a, const struct lock_busy *b)
{
	return a->position == b->position && a->since_ms == b->since_ms &&
	    a->ended_ms == b->ended_ms &&
	    strcmp(a->user, b->user) == 0 && strcmp(a->host, b->host) == 0 &&
	    strcmp(a->pid, b->pid) == 0 && strcmp(a->cmd, b->cmd) == 0;
}

void
waitline_update(struct waitline *wl, const struct lock_busy *b)
{
	char text[1024], key[64];

	wl->last = *b;
	wl->last_at = mono_ms();
	if (msg_level >= MSG_VERBOSE &&
	    !(wl->logged && same_holder(&wl->logged_as, b))) {
		wl->logged = 1;
		wl->logged_as = *b;
		printable(wl->key, strlen(wl->key), key, sizeof(key));
		describe(wl, 0, text, sizeof(text));
		msg_verbose("waiting for '%s': %s", key, text);
	}
	waitline_draw(wl);
}

int
waitline_on(struct waitline *wl)
{
	if (!wl->tty_known) {
		wl->on = wl->on && isatty(STDERR_FILENO);
		wl->tty_known = 1;
	}
	return wl->on;
}

void
waitline_draw(struct waitline *wl)
{
	char text[1024], key[64], waited[32], line[1200];
	int64_t now = mono_ms();
	struct winsize ws;

	if (!waitline_on(wl))
		return;
	printable(wl->key, strlen(wl->key), key, sizeof(key));
	describe(wl, now - wl->last_at, text, sizeof(text));
	dur_format(now - wl->start, waited, sizeof(waited));
	snprintf(line, sizeof(line), "rlock: waiting for '%s': %s; waited %s",
	    key, text, waited);
	/* A line that wraps cannot be redrawn with \r: cut it to fit. */
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
	    strlen(line) >= ws.ws_col)
		line[ws.ws_col - 1] = '\0';
	/* \r and erase-to-end: the line is redrawn, never scrolled. */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	wl->drawn = 1;
}

void
waitline_clear(struct waitline *wl)
{
	if (!wl->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	wl->drawn = 0;
}
