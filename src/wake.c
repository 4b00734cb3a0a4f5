// SPDX-License-Identifier: MIT
/*
 * Wake-ups. Sharded pub/sub (Redis 7) where the server has it: in a
 * Cluster a message then reaches the slot's node only, not every node over
 * the bus; the scripts SPUBLISH where they can, so a Redis 6 gets PUBLISH
 * and SUBSCRIBE on both sides. A BLPOP is sent with a server-side timeout
 * (the connection stays healthy when it runs out) and abandoned with its
 * connection on a signal.
 */
#include "wake.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "util.h"

/* --redlock takes at most this many masters. */
#define WAKE_MAX_SUBS 9

struct waker {
	/* BLPOP on pop[at], the others watched while idle */
	struct server *pop[WAKE_MAX_SUBS];	/* the caller's */
	int npop;			/* 0 for subscriptions */
	int at;				/* where the BLPOP is in flight */
	int armed;			/* a BLPOP is in flight */
	int64_t armed_until;
	int sharp;			/* armed_until is an expiry: see below */
	waker_follow_fn follow;		/* sends a command behind the BLPOP */
	void *follow_arg;
	int follow_owed;		/* sent behind the BLPOP in flight */
	int follow_ready;		/* its reply is next on the connection */
	int follow_lost;		/* closed with one owed */
	/* subscriptions */
	struct server *sub[WAKE_MAX_SUBS];
	int n, need;
	int listening[WAKE_MAX_SUBS];
	char *name;			/* the list, or the channel */
	size_t name_len;
	char *also;			/* a second list to BLPOP, or NULL */
	size_t also_len;
	struct failure fail;
};

int
wake_parse_subscribe(const struct reply *r)
{
	return r->type == REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REPLY_STRING &&
	    (strcmp(r->element[0]->str, "ssubscribe") == 0 ||
	    strcmp(r->element[0]->str, "subscribe") == 0);
}

int
wake_parse_unsubscribed(const struct reply *r)
{
	return r->type == REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REPLY_STRING &&
	    (strcmp(r->element[0]->str, "sunsubscribe") == 0 ||
	    strcmp(r->element[0]->str, "unsubscribe") == 0);
}

int
wake_parse_pop(const struct reply *r)
{
	if (r->type == REPLY_NIL)
		return 0;
	return r->type == REPLY_ARRAY ? 1 : -1;
}

struct waker *
wake_pop(struct server *s, const char *list, size_t len)
{
	return wake_pop_any(&s, 1, 1, list, len);
}

void
wake_pop_also(struct waker *w, const char *list, size_t len)
{
	free(w->also);
	w->also = xstrndup(list, len);
	w->also_len = len;
}

struct waker *
wake_pop_any(struct server *const *s, int n, int need, const char *list,
    size_t len)
{
	struct waker *w = xcalloc(1, sizeof(*w));
	int i;

	if (n > WAKE_MAX_SUBS)
		n = WAKE_MAX_SUBS;
	for (i = 0; i < n; i++)
		w->pop[i] = s[i];
	w->npop = n;
	w->need = need;
	w->name = xstrndup(list, len);
	w->name_len = len;
	return w;
}

/* How many of the BLPOP servers are connected. */
static int
pop_open(const struct waker *w)
{
	int i, up = 0;

	for (i = 0; i < w->npop; i++)
		up += server_is_open(w->pop[i]);
	return up;
}

struct waker *
wake_sub(struct server *const *like, int n, int need, const char *ch,
    size_t len)
{
	struct waker *w = xcalloc(1, sizeof(*w));
	int64_t t;
	int i;

	if (n > WAKE_MAX_SUBS)
		n = WAKE_MAX_SUBS;
	for (i = 0; i < n; i++) {
		t = server_connect_timeout(like[i]);
		w->sub[i] = server_clone(like[i], t, t);
	}
	w->n = n;
	w->need = need;
	w->name = xstrndup(ch, len);
	w->name_len = len;
	return w;
}

void
waker_free(struct waker *w)
{
	int i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		server_free(w->sub[i]);
	free(w->name);
	free(w->also);
	free(w);
}

const struct failure *
waker_failure(const struct waker *w)
{
	return &w->fail;
}

static void
lost(struct waker *w, struct server *s)
{
	w->fail = *server_failure(s);
	server_close(s);
}

/* SSUBSCRIBE, or SUBSCRIBE where the server has no sharded pub/sub. */
static int
subscribe(struct waker *w, int i)
{
	struct server *s = w->sub[i];
	const char *argv[2] = { "SSUBSCRIBE", w->name };
	size_t lens[2] = { 10, w->name_len };
	struct reply *r;
	int ok;

	if (!server_is_open(s) && server_open(s) != 0) {
		w->fail = *server_failure(s);
		return -1;
	}
	if ((r = server_command(s, 2, argv, lens)) == NULL) {
		w->fail = *server_failure(s);
		return -1;
	}
	if (r->type == REPLY_ERROR &&
	    strstr(r->str, "unknown command") != NULL) {
		reply_free(r);
		argv[0] = "SUBSCRIBE";
		lens[0] = 9;
		if ((r = server_command(s, 2, argv, lens)) == NULL) {
			w->fail = *server_failure(s);
			return -1;
		}
	}
	if (!(ok = wake_parse_subscribe(r))) {
		server_fail_reply(s, "subscribe", r);
		lost(w, s);
	}
	reply_free(r);
	return ok ? 0 : -1;
}

int
waker_listen(struct waker *w)
{
	int i, up = 0;

	if (w->npop)
		return w->npop == 1 ? 1 : pop_open(w);
	for (i = 0; i < w->n; i++) {
		if (!w->listening[i] || !server_is_open(w->sub[i]))
			w->listening[i] = subscribe(w, i) == 0;
		up += w->listening[i];
	}
	return up;
}

int
waker_listening(const struct waker *w)
{
	int i, up = 0;

	/* One server: a closed one is opened again by the BLPOP. */
	if (w->npop)
		return w->npop == 1 || pop_open(w) >= w->need;
	for (i = 0; i < w->n; i++)
		up += w->listening[i] && server_is_open(w->sub[i]);
	return up >= w->need;
}

/* The BLPOP's connection is closing: a command sent behind it may have
 * run, unseen. */
static void
drop_follow(struct waker *w)
{
	if (w->follow_owed || w->follow_ready)
		w->follow_lost = 1;
	w->follow_owed = 0;
	w->follow_ready = 0;
}

void
waker_cancel(struct waker *w)
{
	int i;

	if (w->npop && (w->armed || w->follow_ready)) {
		drop_follow(w);
		server_close(w->pop[w->at]);
	}
	w->armed = 0;
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
drain(struct waker *w, int i)
{
	struct server *s = w->sub[i];
	struct reply *r;
	int got = 0, next = 0, n;

	while ((n = server_recv(s, 0, &r)) == 1) {
		if (wake_parse_unsubscribed(r)) {
			reply_free(r);
			failure_set(&w->fail, RL_EXIT_UNAVAILABLE, "the "
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
		w->fail = *server_failure(s);
		w->listening[i] = 0;
		return -1;
	}
	return got ? 1 : next ? 2 : 0;
}

static int
poll_ms(int64_t until)
{
	int64_t left = until - mono_ms();

	if (left < 0)
		return 0;
	return (int)(left > 60000 ? 60000 : left);
}

/*
 * When fewer than `need` subscriptions are left alive, end the wait: a
 * waiter whose server died must try now, rather than wait out the
 * holder's lease to learn the same.
 */
static enum woke
wait_subs(struct waker *w, int64_t until, int sigfd)
{
	struct pollfd p[1 + WAKE_MAX_SUBS];
	int i, r, d, got = 0, alive;

	p[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	for (;;) {
		for (i = 0, alive = 0; i < w->n; i++) {
			if (w->listening[i] && server_pending(w->sub[i]) &&
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
		r = poll(p, (nfds_t)(1 + w->n), poll_ms(until));
		if (r < 0 && errno != EINTR) {
			failure_set(&w->fail, RL_EXIT_OSERR, "poll: %s",
			    strerror(errno));
			return WOKE_LOST;
		}
		if (r <= 0)
			continue;
		if (p[0].revents & POLLIN)
			return WOKE_SIGFD;
		for (i = 0; i < w->n; i++)
			if (p[1 + i].revents && (d = drain(w, i)) > 0 &&
			    got != 1)
				got = d;
	}
}

static enum woke
pop_lost(struct waker *w, const char *why)
{
	struct server *s = w->pop[w->at];

	if (why)
		failure_set(&w->fail, RL_EXIT_UNAVAILABLE, "BLPOP: %s", why);
	else
		w->fail = *server_failure(s);
	w->armed = 0;
	drop_follow(w);
	server_close(s);
	return WOKE_LOST;
}

/* The server to BLPOP on: the only one (a closed one is opened by the
 * send), or the first one connected; -1 when fewer than `need` are. */
static int
pick(const struct waker *w)
{
	int i;

	if (w->npop == 1)
		return 0;
	if (pop_open(w) < w->need)
		return -1;
	for (i = 0; !server_is_open(w->pop[i]); i++)
		;
	return i;
}

static int
arm(struct waker *w, int64_t until)
{
	const char *argv[4] = { "BLPOP", w->name, w->also, NULL };
	size_t lens[4] = { 5, w->name_len, w->also_len, 0 };
	int64_t left = until - mono_ms();
	int n = w->also ? 3 : 2;
	char secs[32];

	lens[n] = (size_t)snprintf(secs, sizeof(secs), "%lld.%03lld",
	    (long long)(left / 1000), (long long)(left % 1000));
	argv[n] = secs;
	if (server_send(w->pop[w->at], n + 1, argv, lens) < 0)
		return -1;
	w->armed = 1;
	w->armed_until = until;
	return 0;
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

/*
 * Plain waiter: BLPOP a wake token until `until`, or a signal. Redis
 * answers nil at `until`; a silent server gets one connect timeout more.
 * But Redis times a BLPOP out on its own clock tick, up to 1000/hz ms
 * (100 ms by default) late: when `until` is the moment the holder's key
 * expires (`sharp`: a dead holder, --min-hold), the BLPOP is abandoned
 * then, with its connection, so the waiter tries at once.
 * With several servers (a quorum's masters), the BLPOP goes to one and
 * the others' idle connections are polled too: when fewer than `need`
 * are left, the BLPOP is abandoned (its connection closed) and the wait
 * ends WOKE_LOST, as no grant is possible then.
 */
static enum woke
wait_pop(struct waker *w, int64_t until, int sigfd, int sharp)
{
	struct pollfd p[1 + WAKE_MAX_SUBS];
	struct reply *r = NULL;
	int64_t hard;
	int i, n;

	if (!w->armed) {
		/* The follow's reply comes next on this connection. */
		if (until - mono_ms() <= 0 || w->follow_ready)
			return WOKE_TIMEOUT;
		if ((w->at = pick(w)) < 0) {
			failure_set(&w->fail, RL_EXIT_UNAVAILABLE, "fewer "
			    "than %d servers connected", w->need);
			return WOKE_LOST;
		}
		if (arm(w, until) < 0)
			return pop_lost(w, NULL);
		w->sharp = sharp;
		/* Behind a BLPOP that ends at the retry time only: one
		 * ended early to redraw a line needs no attempt. */
		if (sharp && w->follow && w->npop == 1) {
			if (w->follow(w->follow_arg) < 0)
				return pop_lost(w, NULL);
			w->follow_owed = 1;
		}
	}
	hard = w->armed_until + server_connect_timeout(w->pop[w->at]);
	if (w->sharp)
		hard = w->armed_until;
	p[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	while (r == NULL) {
		if (!server_pending(w->pop[w->at])) {
			if (w->sharp && mono_ms() >= hard) {
				/* The next attempt reconnects. */
				w->armed = 0;
				drop_follow(w);
				server_close(w->pop[w->at]);
				return WOKE_TIMEOUT;
			}
			if (mono_ms() >= hard)
				return pop_lost(w, "no answer");
			for (i = 0; i < w->npop; i++)
				p[1 + i] = (struct pollfd){ .fd =
				    server_fd(w->pop[i]), .events = POLLIN };
			n = poll(p, (nfds_t)(1 + w->npop), poll_ms(hard));
			if (n < 0 && errno != EINTR)
				return pop_lost(w, strerror(errno));
			if (n <= 0)
				continue;
			if (p[0].revents & POLLIN)
				return WOKE_SIGFD;
			for (i = 0; i < w->npop; i++) {
				if (i == w->at || p[1 + i].revents == 0 ||
				    !idle_gone(w->pop[i]))
					continue;
				if (pop_open(w) < w->need) {
					w->fail = *server_failure(w->pop[i]);
					w->armed = 0;
					server_close(w->pop[w->at]);
					return WOKE_LOST;
				}
			}
			if (p[1 + w->at].revents == 0)
				continue;
		}
		if (server_recv(w->pop[w->at], 0, &r) < 0)
			return pop_lost(w, NULL);
	}
	w->armed = 0;
	w->follow_ready = w->follow_owed;
	w->follow_owed = 0;
	if (server_take_redirect(w->pop[w->at], r)) {
		/* The slot moved, or the master changed: try there. */
		if (w->follow_ready) {
			drop_follow(w);
			server_close(w->pop[w->at]);
		}
		reply_free(r);
		failure_set(&w->fail, RL_EXIT_UNAVAILABLE, "BLPOP redirected");
		return WOKE_LOST;
	}
	n = wake_parse_pop(r);
	reply_free(r);
	if (n == 0)
		return WOKE_TIMEOUT;
	return n > 0 ? WOKE_MESSAGE : pop_lost(w, "unexpected reply");
}

void
waker_follow(struct waker *w, waker_follow_fn fn, void *arg)
{
	w->follow = fn;
	w->follow_arg = arg;
}

int
waker_followed(const struct waker *w)
{
	return w->follow_ready;
}

int
waker_take_follow(struct waker *w)
{
	int r = w->follow_ready;

	w->follow_ready = 0;
	return r;
}

int
waker_follow_lost(const struct waker *w)
{
	return w->follow_lost;
}

enum woke
waker_wait(struct waker *w, int64_t until, int sigfd)
{
	return w->npop ? wait_pop(w, until, sigfd, 0) :
	    wait_subs(w, until, sigfd);
}

enum woke
waker_wait_expiry(struct waker *w, int64_t until, int sigfd)
{
	return w->npop ? wait_pop(w, until, sigfd, 1) :
	    wait_subs(w, until, sigfd);
}
