// SPDX-License-Identifier: MIT
/*
 * The subscription waker (wake.h): the --fair waiter's own channel, on
 * connections of its own (a subscribed connection cannot run scripts).
 * Sharded pub/sub (Redis 7) where the server has it: in a Cluster a
 * message then reaches the slot's node only, not every node over the
 * bus; the scripts SPUBLISH where they can, so a Redis 6 gets PUBLISH and
 * SUBSCRIBE on both sides. A channel another client publishes on too
 * (Redisson's: PUBLISH, or SPUBLISH on a Cluster) is subscribed both ways.
 */
#include "wake.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "util.h"

struct sub_waker {
	struct waker base;		/* first: a struct waker * is ours */
	struct server **sub;		/* ours, n of them */
	int *listening;
	struct pollfd *p;		/* the signal fd, then each one's */
	int n, need;
	int both;			/* SUBSCRIBE too */
	char *ch;
	size_t ch_len;
};

/* A (S)SUBSCRIBE's reply r (NULL: none came), freed here: 0, or -1
 * with the failure kept (and the connection closed on a wrong one). */
static int
confirmed(struct sub_waker *w, struct server *s, struct reply *r)
{
	int ok;

	if (r == NULL) {
		w->base.fail = *server_failure(s);
		return -1;
	}
	if (!(ok = wake_parse_subscribe(r))) {
		server_fail_reply(s, "subscribe", r);
		w->base.fail = *server_failure(s);
		server_close(s);
	}
	reply_free(r);
	return ok ? 0 : -1;
}

/* SSUBSCRIBE, or SUBSCRIBE where the server has no sharded pub/sub; with
 * `both`, SUBSCRIBE after the SSUBSCRIBE too. */
static int
subscribe(struct sub_waker *w, int i)
{
	struct server *s = w->sub[i];
	struct failure *f = server_failure_rw(s);
	const char *argv[2] = { "SSUBSCRIBE", w->ch };
	size_t lens[2] = { 10, w->ch_len };
	struct reply *r;

	if (!server_is_open(s) && server_open(s) != 0) {
		w->base.fail = *server_failure(s);
		return -1;
	}
	r = server_command(s, 2, argv, lens);
	/* Closed on it: a proxy that has no pub/sub (twemproxy), or a
	 * restart. Once more on a new connection, which answers its login
	 * first: closed on again, it is not taken there, and --fair cannot
	 * wait without it. */
	if (r == NULL && failure_closed_on(f, CMD_SSUBSCRIBE) &&
	    (r = server_command(s, 2, argv, lens)) == NULL &&
	    failure_refused(f, CMD_SSUBSCRIBE))
		snprintf(f->why + strlen(f->why), sizeof(f->why) -
		    strlen(f->why), "; --fair needs it");
	/* No sharded pub/sub here: SUBSCRIBE alone; with `both`, after. */
	if (r != NULL && r->type == REPLY_ERROR &&
	    strstr(r->str, "unknown command") != NULL)
		reply_free(r);
	else if (confirmed(w, s, r) < 0)
		return -1;
	else if (!w->both)
		return 0;
	argv[0] = "SUBSCRIBE";
	lens[0] = 9;
	return confirmed(w, s, server_command(s, 2, argv, lens));
}

static int
sub_listen(struct waker *wk)
{
	struct sub_waker *w = (struct sub_waker *)wk;
	int i, up = 0;

	for (i = 0; i < w->n; i++) {
		if (!w->listening[i] || !server_is_open(w->sub[i]))
			w->listening[i] = subscribe(w, i) == 0;
		up += w->listening[i];
	}
	return up;
}

static int
sub_listening(const struct waker *wk)
{
	const struct sub_waker *w = (const struct sub_waker *)wk;
	int i, up = 0;

	for (i = 0; i < w->n; i++)
		up += w->listening[i] && server_is_open(w->sub[i]);
	return up >= w->need;
}

static void
sub_cancel(struct waker *wk)
{
	struct sub_waker *w = (struct sub_waker *)wk;
	int i;

	for (i = 0; i < w->n; i++) {
		server_close(w->sub[i]);
		w->listening[i] = 0;
	}
}

/* A message that says "next" (queue.lua: the one after the --fair head,
 * told to look soon rather than try now). */
static int
is_next(const struct reply *r)
{
	const struct reply *m;

	if (r->type != REPLY_ARRAY || r->elements != 3)
		return 0;
	m = r->element[2];
	return m->type == REPLY_STRING && m->len == 4 &&
	    memcmp(m->str, "next", 4) == 0;
}

/* Consume what subscription i delivered: 1 a message, 2 only "next"
 * messages, 0 nothing yet, -1 it died (or ended: the slot moved, so
 * subscribe again where it lives now, and try, as a release may fall in
 * between). */
static int
drain(struct sub_waker *w, int i)
{
	struct server *s = w->sub[i];
	struct reply *r;
	int got = 0, next = 0, n;

	while ((n = server_recv(s, 0, &r)) == 1) {
		if (wake_parse_unsubscribed(r)) {
			reply_free(r);
			failure_set(&w->base.fail, RL_EXIT_UNAVAILABLE, "the "
			    "subscription ended");
			server_close(s);
			w->listening[i] = 0;
			return -1;
		}
		if (is_next(r))
			next = 1;
		else
			got = 1;
		reply_free(r);
		if (!server_pending(s))
			break;
	}
	if (n < 0) {
		w->base.fail = *server_failure(s);
		w->listening[i] = 0;
		return -1;
	}
	return got ? 1 : next ? 2 : 0;
}

/*
 * When fewer than `need` subscriptions are left alive, end the wait: a
 * waiter whose server died must try now, rather than wait out the
 * holder's lease to learn the same. `until` is never sharp here: a
 * message, not Redis's clock tick, ends the wait.
 */
static enum woke
sub_wait(struct waker *wk, int64_t until, int sigfd, int sharp)
{
	struct sub_waker *w = (struct sub_waker *)wk;
	struct pollfd *p = w->p;
	int i, r, d, got = 0, alive;

	(void)sharp;
	p[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	memset(p + 1, 0, (size_t)w->n * sizeof(*p));
	for (;;) {
		/* What poll saw, or what the transport has buffered. */
		for (i = 0, alive = 0; i < w->n; i++) {
			if (w->listening[i] && (p[1 + i].revents ||
			    server_pending(w->sub[i])) &&
			    (d = drain(w, i)) > 0 && got != 1)
				got = d;
			alive += w->listening[i];
		}
		if (got)
			return got == 1 ? WOKE_MESSAGE : WOKE_NEXT;
		if (alive < w->need)
			return WOKE_LOST;
		if (mono_ms() >= until)
			return WOKE_TIMEOUT;
		for (i = 0; i < w->n; i++)
			p[1 + i] = (struct pollfd){ .fd = w->listening[i] ?
			    server_fd(w->sub[i]) : -1, .events = POLLIN };
		r = poll(p, (nfds_t)(1 + w->n), deadline_poll_ms(until));
		if (r < 0 && errno != EINTR) {
			failure_set(&w->base.fail, RL_EXIT_OSERR, "poll: %s",
			    strerror(errno));
			return WOKE_LOST;
		}
		if (r > 0 && (p[0].revents & POLLIN))
			return WOKE_SIGFD;
	}
}

static void
sub_free(struct waker *wk)
{
	struct sub_waker *w = (struct sub_waker *)wk;
	int i;

	for (i = 0; i < w->n; i++)
		server_free(w->sub[i]);
	free(w->sub);
	free(w->listening);
	free(w->p);
	free(w->ch);
	free(w);
}

static const struct waker_ops SUB_OPS = {
	.listen = sub_listen,
	.listening = sub_listening,
	.wait = sub_wait,
	.cancel = sub_cancel,
	.free = sub_free,
};

struct waker *
wake_sub(struct server *const *like, int n, int need, const char *ch,
    size_t len, int both)
{
	struct sub_waker *w = xcalloc(1, sizeof(*w));
	int64_t t;
	int i;

	w->base.ops = &SUB_OPS;
	w->sub = xcalloc((size_t)n, sizeof(*w->sub));
	w->listening = xcalloc((size_t)n, sizeof(*w->listening));
	w->p = xcalloc((size_t)n + 1, sizeof(*w->p));
	for (i = 0; i < n; i++) {
		t = server_connect_timeout(like[i]);
		w->sub[i] = server_clone(like[i], t, t);
	}
	w->n = n;
	w->need = need;
	w->both = both;
	w->ch = xstrndup(ch, len);
	w->ch_len = len;
	return &w->base;
}
