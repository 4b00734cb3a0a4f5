// SPDX-License-Identifier: MIT
/*
 * The BLPOP waker (wake.h): plain and --redlock waiters block in BLPOP on
 * P{KEY}:tok, on a connection the lock keeps, where each release leaves
 * one token. A BLPOP is sent with a server-side timeout (the connection
 * stays healthy when it runs out) and abandoned with its connection on a
 * signal.
 */
#include "wake.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "util.h"

/* How often a waiter looks at the lock where BLPOP is refused. */
#define POP_LOOK_MS 500

/* What start() and await() return when the wait goes on (else a woke). */
#define GO_ON (-1)

struct pop_waker {
	struct waker base;		/* first: a struct waker * is ours */
	struct server **pop;		/* the caller's, n of them */
	struct pollfd *p;		/* the signal fd, then each one's */
	int n, need;
	int at;				/* where the BLPOP is in flight */
	int armed;			/* a BLPOP is in flight */
	int64_t armed_until;
	int sharp;			/* armed_until is an expiry: pop_wait */
	struct wake_behind behind;	/* send NULL: nothing behind */
	int closed_on;			/* BLPOPs in a row closed on */
	int no_pop;			/* ... and so no more: look instead */
	char *list;
	size_t list_len;
	char *also;			/* a second list to BLPOP, or NULL */
	size_t also_len;
};

/* How many of the BLPOP servers are connected; one server counts as
 * connected, as a closed one is opened again by the BLPOP. */
static int
pop_open(const struct pop_waker *w)
{
	int i, up = 0;

	if (w->n == 1)
		return 1;
	for (i = 0; i < w->n; i++)
		up += server_is_open(w->pop[i]);
	return up;
}

static int
pop_listen(struct waker *wk)
{
	return pop_open((struct pop_waker *)wk);
}

static int
pop_listening(const struct waker *wk)
{
	const struct pop_waker *w = (const struct pop_waker *)wk;

	return pop_open(w) >= w->need;
}

static void
pop_cancel(struct waker *wk)
{
	struct pop_waker *w = (struct pop_waker *)wk;

	if (w->armed)
		server_close(w->pop[w->at]);
	w->armed = 0;
}

static enum woke
pop_lost(struct pop_waker *w, const char *why)
{
	struct server *s = w->pop[w->at];
	const struct failure *f = server_failure(s);

	if (why)
		failure_set(&w->base.fail, RL_EXIT_UNAVAILABLE, "BLPOP: %s",
		    why);
	else
		w->base.fail = *f;
	/*
	 * A proxy without blocking commands (twemproxy) closes the
	 * connection on BLPOP; a restart may too, but not twice in a row
	 * on connections that answered the attempt just before. Then the
	 * wait goes on without BLPOP, looking at the lock now and then:
	 * a wrong guess costs only the wake-up's speed.
	 */
	if (why == NULL && failure_closed_on(f, CMD_BLPOP) &&
	    ++w->closed_on == 2) {
		w->no_pop = 1;
		failure_set(&w->base.fail, RL_EXIT_UNAVAILABLE, "the server "
		    "or a proxy in front of it refused BLPOP (it closed the "
		    "connection on it): looking every %d ms instead",
		    POP_LOOK_MS);
	}
	w->armed = 0;
	server_close(s);
	return WOKE_LOST;
}

/* The server to BLPOP on: the only one (a closed one is opened by the
 * send), or the first one connected; -1 when fewer than `need` are. */
static int
pick(const struct pop_waker *w)
{
	int i;

	if (pop_open(w) < w->need)
		return -1;
	for (i = 0; w->n > 1 && !server_is_open(w->pop[i]); i++)
		;
	return i;
}

/*
 * An idle server (no command in flight) became readable: Redis closed it,
 * or said something it had not been asked. Either way it is closed now;
 * 1 if it was, 0 if nothing came after all.
 */
static int
idle_gone(struct server *s)
{
	struct reply *r = NULL;
	int n = server_recv(s, 0, &r);

	if (n == 0)
		return 0;
	if (n > 0) {
		failure_set(server_failure_rw(s), RL_EXIT_UNAVAILABLE, "an "
		    "unexpected reply on an idle connection");
		reply_free(r);
		server_close(s);
	}
	return 1;
}

/* Arm a BLPOP until `until`, with what goes behind it: GO_ON, or a woke
 * to end the wait with. */
static int
start(struct pop_waker *w, int64_t until, int sharp)
{
	const char *argv[4] = { "BLPOP", w->list, w->also, NULL };
	size_t lens[4] = { 5, w->list_len, w->also_len, 0 };
	int64_t left = until - mono_ms();
	int n = w->also ? 3 : 2;
	char secs[32];

	if (left <= 0)
		return WOKE_TIMEOUT;
	if ((w->at = pick(w)) < 0) {
		failure_set(&w->base.fail, RL_EXIT_UNAVAILABLE, "fewer than "
		    "%d servers connected", w->need);
		return WOKE_LOST;
	}
	lens[n] = (size_t)snprintf(secs, sizeof(secs), "%lld.%03lld",
	    (long long)(left / 1000), (long long)(left % 1000));
	argv[n] = secs;
	if (server_send(w->pop[w->at], n + 1, argv, lens) < 0)
		return pop_lost(w, NULL);
	w->armed = 1;
	w->armed_until = until;
	w->sharp = sharp;
	/* Behind a BLPOP that ends at the retry time only: one ended early
	 * to redraw a line needs no attempt. */
	if (sharp && w->behind.send && w->n == 1 &&
	    w->behind.send(w->behind.arg) < 0)
		return pop_lost(w, NULL);
	return GO_ON;
}

/*
 * Wait for the BLPOP's reply until `hard` while the other servers' idle
 * connections are watched: GO_ON with *r, or a woke to end the wait with.
 */
static int
await(struct pop_waker *w, int64_t hard, int sigfd, struct reply **r)
{
	struct pollfd *p = w->p;
	int i, n;

	p[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	while (*r == NULL) {
		if (!server_pending(w->pop[w->at])) {
			if (w->sharp && mono_ms() >= hard) {
				/* The next attempt reconnects. */
				pop_cancel(&w->base);
				return WOKE_TIMEOUT;
			}
			if (mono_ms() >= hard)
				return pop_lost(w, "no answer");
			for (i = 0; i < w->n; i++)
				p[1 + i] = (struct pollfd){ .fd =
				    server_fd(w->pop[i]), .events = POLLIN };
			n = poll(p, (nfds_t)(1 + w->n), deadline_poll_ms(hard));
			if (n < 0 && errno != EINTR)
				return pop_lost(w, strerror(errno));
			if (n <= 0)
				continue;
			if (p[0].revents & POLLIN)
				return WOKE_SIGFD;
			for (i = 0; i < w->n; i++) {
				if (i == w->at || p[1 + i].revents == 0 ||
				    !idle_gone(w->pop[i]))
					continue;
				if (pop_open(w) < w->need) {
					w->base.fail = *server_failure(
					    w->pop[i]);
					pop_cancel(&w->base);
					return WOKE_LOST;
				}
			}
			if (p[1 + w->at].revents == 0)
				continue;
		}
		if (server_recv(w->pop[w->at], 0, r) < 0)
			return pop_lost(w, NULL);
	}
	return GO_ON;
}

/*
 * Without BLPOP: sleep until `until` (WOKE_TIMEOUT), or a signal. Sooner,
 * after POP_LOOK_MS, as if woken (a release may have come, unheard), so
 * that the caller looks at the lock.
 */
static enum woke
look_later(int64_t until, int sigfd)
{
	struct pollfd p = { .fd = sigfd, .events = POLLIN };
	int64_t by = mono_ms() + POP_LOOK_MS;

	if (until <= by)
		by = until;
	while (mono_ms() < by)
		if (poll(&p, 1, deadline_poll_ms(by)) > 0)
			return WOKE_SIGFD;
	return by == until ? WOKE_TIMEOUT : WOKE_MESSAGE;
}

/*
 * BLPOP a wake token until `until`, or a signal. Redis answers nil at
 * `until`; a silent server gets one connect timeout more. But Redis times
 * a BLPOP out on its own clock tick, up to 1000/hz ms (100 ms by default)
 * late: when `until` is the moment the holder's key expires (`sharp`: a
 * dead holder, --min-hold), the BLPOP is abandoned then, with its
 * connection, so the waiter tries at once.
 * With several servers (a quorum's masters), the BLPOP goes to one and
 * the others' idle connections are polled too: when fewer than `need`
 * are left, the BLPOP is abandoned (its connection closed) and the wait
 * ends WOKE_LOST, as no grant is possible then.
 */
static enum woke
pop_wait(struct waker *wk, int64_t until, int sigfd, int sharp)
{
	struct pop_waker *w = (struct pop_waker *)wk;
	struct reply *r = NULL;
	int64_t hard;
	int n;

	if (w->no_pop)
		return look_later(until, sigfd);
	if (!w->armed && (n = start(w, until, sharp)) != GO_ON)
		return (enum woke)n;
	hard = w->armed_until + (w->sharp ? 0 :
	    server_connect_timeout(w->pop[w->at]));
	if ((n = await(w, hard, sigfd, &r)) != GO_ON)
		return (enum woke)n;
	w->armed = 0;
	w->closed_on = 0;
	if (server_take_redirect(w->pop[w->at], r)) {
		/* The slot moved, or the master changed: try there. */
		reply_free(r);
		failure_set(&w->base.fail, RL_EXIT_UNAVAILABLE, "BLPOP "
		    "redirected");
		return WOKE_LOST;
	}
	n = wake_parse_pop(r);
	reply_free(r);
	if (n == 0)
		return WOKE_TIMEOUT;
	return n > 0 ? WOKE_MESSAGE : pop_lost(w, "unexpected reply");
}

static void
pop_free(struct waker *wk)
{
	struct pop_waker *w = (struct pop_waker *)wk;

	free(w->pop);
	free(w->p);
	free(w->list);
	free(w->also);
	free(w);
}

static const struct waker_ops POP_OPS = {
	.listen = pop_listen,
	.listening = pop_listening,
	.wait = pop_wait,
	.cancel = pop_cancel,
	.free = pop_free,
};

struct waker *
wake_pop_any(struct server *const *s, int n, int need, const char *list,
    size_t len)
{
	struct pop_waker *w = xcalloc(1, sizeof(*w));

	w->base.ops = &POP_OPS;
	w->pop = xcalloc((size_t)n, sizeof(*w->pop));
	w->p = xcalloc((size_t)n + 1, sizeof(*w->p));
	memcpy(w->pop, s, (size_t)n * sizeof(*w->pop));
	w->n = n;
	w->need = need;
	w->list = xstrndup(list, len);
	w->list_len = len;
	return &w->base;
}

struct waker *
wake_pop(struct server *s, const char *list, size_t len,
    const struct wake_behind *behind)
{
	struct waker *wk = wake_pop_any(&s, 1, 1, list, len);

	if (behind != NULL)
		((struct pop_waker *)wk)->behind = *behind;
	return wk;
}

void
wake_pop_also(struct waker *wk, const char *list, size_t len)
{
	struct pop_waker *w = (struct pop_waker *)wk;

	free(w->also);
	w->also = xstrndup(list, len);
	w->also_len = len;
}
