// SPDX-License-Identifier: MIT
/*
 * The waiting loop. Order matters: SUBSCRIBE first, then try, then block;
 * a release between our try and our block is then a message already queued
 * for us, not a lost wake-up. The subscriber has its own connection (a
 * subscribed connection cannot run scripts). Reads use poll() on the
 * socket, never a socket timeout: in hiredis a timeout kills the context
 * (REDIS-NOTES section 1). A --fair waiter listens on its own
 * P{KEY}:wake:TOKEN, and joins the queue only while subscribed: the
 * scripts take a queued waiter nobody hears for dead (queue.lua), which
 * is how a killed one is passed over at once. If the subscription drops,
 * the waiter may lose its place meanwhile; it subscribes again and then
 * joins again, at the back if it was dropped, and is served in that
 * turn. Plain waiters block in BLPOP on P{KEY}:tok, where each
 * release leaves one token: Redis gives it to the oldest blocked waiter, so
 * a release wakes one process, not a herd, and a token pushed between our
 * try and our BLPOP waits for us. Between attempts the only traffic is a
 * --fair waiter's heartbeat, and the looks of the one next in line while
 * the head has yet to take a free KEY (HANDOFF_LOOK_MS). A holder that is
 * not rlock wakes nobody when it lets go: its plain waiters sleep without
 * BLPOP and, like the head of a --fair queue, look once a second whether
 * it is gone (foreign.h).
 */
#include "wait.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>

#include <stdlib.h>

#include "exitcode.h"
#include "foreign.h"
#include "quorum.h"
#include "sig.h"
#include "util.h"
#include "waitline.h"

/* Wake a little after the holder's lease ends: Redis expires keys on
 * access at the exact millisecond, so a couple of ms cover our rounding. */
#define EXPIRY_SLACK_MS 3
/* A holder without expiry that is not foreign (no :meta) cannot be
 * rlock's either; back off up to this. Foreign ones: FOREIGN_LOOK_MS. */
#define NO_TTL_BACKOFF_MAX_MS 5000
#define REDRAW_MS 1000
/* Behind Sentinel, a waiter asks this often whether the master moved
 * (the old one may stay writable, and silent, for seconds). */
#define SENTINEL_RECHECK_MS 1000

struct waiter {
	struct conn *cn;		/* main connection: scripts */
	struct conn sub;		/* subscribed to our wake channel */
	const struct lock_ctx *ctx;
	struct waitline line;
	int sigfd;
	int64_t deadline;		/* INT64_MAX: forever */
	int64_t no_ttl_backoff;
	int64_t next_beat;		/* --fair heartbeat due */
	struct conn *qsub;		/* --redlock: each master's :wake */
	int nq;
	int queued;			/* we are in the --fair queue */
	int uncertain;			/* an attempt's outcome is unknown */
	/* A foreign holder (foreign.h): look, not BLPOP. */
	int look;
	int64_t busy_at;		/* when the last busy reply came */
};

enum woke { WOKE_SIGNAL, WOKE_MESSAGE, WOKE_TIMEOUT, WOKE_SUB_LOST };

int
wait_parse_subscribe(const redisReply *r)
{
	return r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    (strcmp(r->element[0]->str, "ssubscribe") == 0 ||
	    strcmp(r->element[0]->str, "subscribe") == 0);
}

int
wait_parse_unsubscribed(const redisReply *r)
{
	return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    (strcmp(r->element[0]->str, "sunsubscribe") == 0 ||
	    strcmp(r->element[0]->str, "unsubscribe") == 0);
}

int
wait_parse_pop(const redisReply *r)
{
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	return r->type == REDIS_REPLY_ARRAY ? 1 : -1;
}

/*
 * Sharded pub/sub (Redis 7): in a Cluster the message then reaches the
 * slot's node only, not every node over the bus; the scripts SPUBLISH
 * where they can, so a Redis 6 gets PUBLISH and SUBSCRIBE on both sides.
 */
static int
subscribe_on(struct conn *sub, const char *ch, size_t len)
{
	const char *argv[2] = { "SSUBSCRIBE", ch };
	size_t lens[2] = { 10, len };
	redisReply *r;
	int ok;

	if (sub->c == NULL && conn_reopen(sub) != 0)
		return -1;
	if ((r = conn_command(sub, 2, argv, lens)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_ERROR &&
	    strstr(r->str, "unknown command") != NULL) {
		freeReplyObject(r);
		argv[0] = "SUBSCRIBE";
		lens[0] = 9;
		if ((r = conn_command(sub, 2, argv, lens)) == NULL)
			return -1;
	}
	if (!(ok = wait_parse_subscribe(r))) {
		conn_fail_reply(sub, "subscribe", r);
		conn_close(sub);
	}
	freeReplyObject(r);
	return ok ? 0 : -1;
}

static int
subscribe(struct waiter *w)
{
	const struct lock_keys *k = &w->ctx->k;

	return subscribe_on(&w->sub, w->ctx->fair ? k->my_wake : k->wake,
	    w->ctx->fair ? k->my_wake_len : k->wake_len);
}

/*
 * --redlock: a release on any master wakes us, so listen to P{KEY}:wake
 * on each (a release publishes there on every master it frees). A master
 * that cannot be reached is left out: its silence costs nothing, as the
 * holder's lease end is our deadline anyway. Returns how many listen.
 */
static int
subscribe_quorum(struct waiter *w)
{
	const struct lock_keys *k = &w->ctx->k;
	int i, up = 0;

	for (i = 0; i < w->nq; i++) {
		if (w->qsub[i].c == NULL)
			(void)subscribe_on(&w->qsub[i], k->wake, k->wake_len);
		up += w->qsub[i].c != NULL;
	}
	return up;
}

/* Consume what a subscription delivered; -1 if it died. */
static int
drain(struct conn *sub)
{
	void *reply = NULL;

	if (redisBufferRead(sub->c) != REDIS_OK)
		goto dead;
	for (;;) {
		if (redisGetReplyFromReader(sub->c, &reply) != REDIS_OK)
			goto dead;
		if (reply == NULL)
			return 0;
		/* The slot moved away (Cluster): subscribe again where it
		 * lives now, and try, as a release may fall in between. */
		if (wait_parse_unsubscribed(reply)) {
			freeReplyObject(reply);
			goto dead;
		}
		freeReplyObject(reply);
	}
dead:
	conn_close(sub);
	return -1;
}

/* One attempt; reconnects once on a dropped connection (acquire is
 * idempotent per token, so repeating it is safe). */
static enum lock_result
attempt(struct waiter *w, int queue, struct wait_result *res,
    struct lock_busy *busy)
{
	int want = w->line.on || msg_level >= MSG_VERBOSE;
	enum lock_result lr;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (!conn_is_open(w->cn) && conn_reopen(w->cn) != 0)
			return LOCK_ERROR;
		res->granted_at = mono_ms();
		lr = lock_acquire(w->cn, w->ctx, queue, want, &res->fence,
		    busy);
		if (lr == LOCK_BUSY && busy->position >= 0 && !w->queued) {
			w->queued = 1;
			w->next_beat = mono_ms() + WAITER_BEAT_MS;
		}
		/* --- foreign holders: who looks (the --fair head only) --- */
		if (lr == LOCK_BUSY) {
			w->busy_at = mono_ms();
			w->look = busy->foreign && w->nq == 0 &&
			    (!w->ctx->fair || busy->position <= 0);
		}
		if (lr != LOCK_ERROR)
			return lr;
		if (conn_is_open(w->cn))	/* an error reply, not I/O */
			return LOCK_ERROR;
		w->uncertain = 1;
	}
	return LOCK_ERROR;
}

/* When the next attempt is worth making, from the busy reply. */
static int64_t
retry_at(struct waiter *w, const struct lock_busy *b)
{
	int64_t now = mono_ms(), t;

	if (b->wait_ms >= 0) {
		t = b->wait_ms + EXPIRY_SLACK_MS;
		w->no_ttl_backoff = 100;
	} else {
		t = w->no_ttl_backoff;
		if (w->no_ttl_backoff < NO_TTL_BACKOFF_MAX_MS)
			w->no_ttl_backoff *= 2;
	}
	/* A foreign holder's end wakes nobody: try (--redlock) or look
	 * (still_foreign) again within a second. */
	if (b->foreign && (!w->ctx->fair || b->position <= 0) &&
	    (b->wait_ms < 0 || t > FOREIGN_LOOK_MS))
		t = FOREIGN_LOOK_MS;
	if (w->deadline != INT64_MAX && now + t > w->deadline)
		return w->deadline;
	return now + t;
}

/*
 * After a sleep on a foreign holder: 1 when a look finds it still there
 * (sleep again; the reply's wait is aged for retry_at), 0 when an attempt
 * is due (gone, rlock's own holder now, the deadline, an error).
 */
static int
still_foreign(struct waiter *w, struct lock_busy *b)
{
	int64_t now = mono_ms(), aged = now - w->busy_at;

	if (!w->look || now >= w->deadline || !conn_is_open(w->cn) ||
	    foreign_look(w->cn, &w->ctx->k) != 1)
		return 0;
	if (b->wait_ms >= 0)
		b->wait_ms = b->wait_ms > aged ? b->wait_ms - aged : 0;
	w->busy_at = now;
	return 1;
}

/* A signal that should end the wait, if one is pending. */
static int
stop_signal(struct waiter *w, struct wait_result *res)
{
	res->signo = sig_take(w->sigfd, NULL);
	return res->signo != 0 && res->signo != SIGCHLD;
}

/*
 * Block until a message on any of the n subscriptions, `until`, or a
 * signal: a --fair waiter's own channel (n = 1), or P{KEY}:wake on every
 * --redlock master. When fewer than `need` subscriptions are left alive,
 * try now, as a waiter whose server died must, rather than wait out the
 * holder's lease to learn the same.
 */
static enum woke
block_subs(struct waiter *w, struct conn *subs, int n, int need,
    int64_t until, struct wait_result *res)
{
	struct pollfd p[1 + REDLOCK_MAX_PEERS];
	int64_t left;
	int i, r, got = 0, alive;

	p[0] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
	while ((left = until - mono_ms()) > 0 && !got) {
		for (i = 0; i < n; i++)
			p[1 + i] = (struct pollfd){ .fd = conn_fd(&subs[i]),
			    .events = POLLIN };
		r = poll(p, (nfds_t)(1 + n), (int)(left > 60000 ? 60000 :
		    left));
		if (r < 0 && errno != EINTR)
			return WOKE_SUB_LOST;
		if (r <= 0)
			continue;
		if ((p[0].revents & POLLIN) && stop_signal(w, res))
			return WOKE_SIGNAL;
		for (i = 0, alive = 0; i < n; i++) {
			if (p[1 + i].revents && drain(&subs[i]) == 0)
				got = 1;
			alive += subs[i].c != NULL;
		}
		if (!got && alive < need)
			return WOKE_SUB_LOST;
	}
	return got ? WOKE_MESSAGE : WOKE_TIMEOUT;
}

static enum woke
pop_lost(struct waiter *w, const char *why)
{
	if (w->cn->c && why)
		snprintf(w->cn->err, sizeof(w->cn->err), "BLPOP: %s", why);
	conn_close(w->cn);
	return WOKE_SUB_LOST;
}

/*
 * Plain waiter: BLPOP a wake token until `until` (a server-side timeout,
 * so the connection stays healthy), or a signal. A signal abandons the
 * blocked command with its connection.
 */
static enum woke
block_pop(struct waiter *w, int64_t until, struct wait_result *res)
{
	int64_t left = until - mono_ms(), hard;
	const char *argv[3] = { "BLPOP", w->ctx->k.tokens, NULL };
	size_t lens[3];
	struct pollfd p[2];
	redisReply *r = NULL;
	char secs[32];
	int done = 0, n;

	if (left <= 0)
		return WOKE_TIMEOUT;
	if (!conn_is_open(w->cn) && conn_reopen(w->cn) != 0)
		return WOKE_SUB_LOST;
	snprintf(secs, sizeof(secs), "%lld.%03lld", (long long)(left / 1000),
	    (long long)(left % 1000));
	argv[2] = secs;
	lens[0] = 5;
	lens[1] = w->ctx->k.tokens_len;
	lens[2] = strlen(secs);
	if (redisAppendCommandArgv(w->cn->c, 3, argv, lens) != REDIS_OK)
		return pop_lost(w, w->cn->c->errstr);
	do
		if (redisBufferWrite(w->cn->c, &done) != REDIS_OK)
			return pop_lost(w, w->cn->c->errstr);
	while (!done);
	p[0] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = w->cn->c->fd, .events = POLLIN };
	/* Redis answers nil at `until`; a silent server gets a grace. */
	hard = until + w->cn->cfg->connect_timeout_ms;
	while (r == NULL) {
		if ((left = hard - mono_ms()) <= 0)
			return pop_lost(w, "no answer");
		n = poll(p, 2, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno != EINTR)
			return pop_lost(w, strerror(errno));
		if (n <= 0)
			continue;
		if ((p[0].revents & POLLIN) && stop_signal(w, res)) {
			conn_close(w->cn);
			return WOKE_SIGNAL;
		}
		if (p[1].revents && (redisBufferRead(w->cn->c) != REDIS_OK ||
		    redisGetReplyFromReader(w->cn->c, (void **)&r) != REDIS_OK))
			return pop_lost(w, w->cn->c->errstr);
	}
	if (conn_take_redirect(w->cn, r)) {
		/* The slot moved, or the master changed: try there. */
		freeReplyObject(r);
		return WOKE_SUB_LOST;
	}
	n = wait_parse_pop(r);
	freeReplyObject(r);
	if (n == 0)
		return WOKE_TIMEOUT;
	return n > 0 ? WOKE_MESSAGE : pop_lost(w, "unexpected reply");
}

/*
 * Sleep until the retry time, a wake message or a signal, keeping our
 * queue place alive and the wait line fresh on the way.
 */
static enum woke
sleep_until(struct waiter *w, int64_t retry, struct wait_result *res)
{
	enum woke why;
	int64_t until;

	for (;;) {
		until = retry;
		if (w->queued && w->next_beat < until)
			until = w->next_beat;
		if (w->line.on && mono_ms() + REDRAW_MS < until)
			until = mono_ms() + REDRAW_MS;
		if (w->cn->cfg->ep.kind == EP_SENTINEL &&
		    mono_ms() + SENTINEL_RECHECK_MS < until)
			until = mono_ms() + SENTINEL_RECHECK_MS;
		if (w->nq)
			why = block_subs(w, w->qsub, w->nq,
			    quorum_majority(w->cn), until, res);
		else if (w->ctx->fair)
			why = block_subs(w, &w->sub, 1, 1, until, res);
		else if (w->look)	/* no BLPOP: one command a look */
			why = block_subs(w, NULL, 0, 0, until, res);
		else
			why = block_pop(w, until, res);
		if (why != WOKE_TIMEOUT)
			return why;
		/* A failover: releases happen on the new master now. */
		if (conn_recheck(w->cn)) {
			conn_close(&w->sub);
			return WOKE_SUB_LOST;
		}
		if (mono_ms() >= retry)
			return WOKE_TIMEOUT;
		if (w->queued && mono_ms() >= w->next_beat) {
			/* A failed beat is repaired by the next attempt. */
			if (!conn_is_open(w->cn) || lock_heartbeat(w->cn,
			    w->ctx) < 0)
				msg_verbose("heartbeat failed: %s", w->cn->err);
			w->next_beat = mono_ms() + WAITER_BEAT_MS;
		}
		waitline_draw(&w->line);
	}
}

static void
close_subs(struct waiter *w)
{
	int i;

	conn_close(&w->sub);
	for (i = 0; i < w->nq; i++)
		conn_close(&w->qsub[i]);
	free(w->qsub);
	w->qsub = NULL;
	w->nq = 0;
}

/* Leave no trace: the queue place, and a grant we may have got unseen.
 * Still subscribed while we leave the queue, so nobody drops us from it
 * first and the turn we may hold is passed on by our dequeue. */
static enum wait_status
give_up(struct waiter *w, enum wait_status st)
{
	struct conn save;

	waitline_clear(&w->line);
	if (!w->queued && !w->uncertain)
		goto out;
	/* Keep the error that made us give up for the caller's message. */
	save = *w->cn;
	save.c = NULL;
	if (!conn_is_open(w->cn) && conn_reopen(w->cn) != 0)
		goto restore;
	if (w->queued)
		(void)lock_dequeue(w->cn, w->ctx);
	if (w->uncertain)
		(void)lock_release(w->cn, w->ctx);
restore:
	if (st == WAIT_ERROR) {
		w->cn->status = save.status;
		memcpy(w->cn->err, save.err, sizeof(save.err));
	}
out:
	close_subs(w);
	return st;
}

static void
sub_failed(struct waiter *w)
{
	snprintf(w->cn->err, sizeof(w->cn->err), "%s", w->sub.err);
	w->cn->status = w->sub.status;
}

static enum wait_status
granted(struct waiter *w, int64_t start, enum woke why)
{
	trace_event("grant");
	waitline_clear(&w->line);
	close_subs(w);
	msg_verbose("acquired after %lldms of waiting (%s)",
		    (long long)(mono_ms() - start), why == WOKE_MESSAGE ?
		    "woken by a release" : w->look ? "a look found the holder, "
		    "a client other than rlock, gone" :
		    "the holder's lease ran out");
	return WAIT_GRANTED;
}

enum wait_status
wait_lock(struct conn *cn, const struct lock_ctx *ctx, int64_t wait_ms,
    int sigfd, struct wait_result *res)
{
	struct waiter w = { .cn = cn, .ctx = ctx, .sigfd = sigfd,
	    .no_ttl_backoff = 100 };
	struct lock_busy busy;
	enum lock_result lr;
	int64_t start = mono_ms();
	enum woke why;
	int i;

	w.deadline = wait_ms < 0 ? INT64_MAX : start + wait_ms;
	res->signo = 0;
	waitline_init(&w.line, ctx->key, ctx->limit, start);
	w.line.on = w.line.on && wait_ms != 0;
	conn_init_like(&w.sub, cn, cn->cfg->connect_timeout_ms,
	    cn->cfg->connect_timeout_ms);
	/* Not queued yet: a --fair waiter joins once subscribed, below. */
	lr = attempt(&w, 0, res, &busy);
	if (lr == LOCK_GRANTED) {
		trace_event("grant");
		return WAIT_GRANTED;
	}
	if (lr == LOCK_ERROR)
		return give_up(&w, WAIT_ERROR);
	if (wait_ms == 0)
		return give_up(&w, WAIT_TIMEOUT);
	if (cn->cfg->npeers) {
		w.nq = cn->cfg->npeers;
		w.qsub = xcalloc((size_t)w.nq, sizeof(*w.qsub));
		for (i = 0; i < w.nq; i++) {
			w.qsub[i].cfg = &cn->cfg->peers[i];
			conn_set_timeouts(&w.qsub[i], cn->cfg->peer_timeout_ms,
			    cn->cfg->peer_timeout_ms);
		}
		/* Listening: a release from now on reaches us. */
		(void)subscribe_quorum(&w);
		lr = attempt(&w, 0, res, &busy);
		if (lr == LOCK_GRANTED)
			return granted(&w, start, WOKE_MESSAGE);
		if (lr == LOCK_ERROR)
			return give_up(&w, WAIT_ERROR);
	}
	for (;;) {
		if (w.nq)
			(void)subscribe_quorum(&w);
		if (ctx->fair && w.sub.c == NULL) {
			if (subscribe(&w) < 0) {
				sub_failed(&w);
				return give_up(&w, WAIT_ERROR);
			}
			/* Subscribed: a release from now on reaches us, one
			 * from before is seen by this attempt, which (re)joins
			 * the queue. */
			lr = attempt(&w, 1, res, &busy);
			if (lr == LOCK_GRANTED)
				return granted(&w, start, WOKE_MESSAGE);
			if (lr == LOCK_ERROR)
				return give_up(&w, WAIT_ERROR);
		}
		if (mono_ms() >= w.deadline)
			return give_up(&w, WAIT_TIMEOUT);
		waitline_update(&w.line, &busy);
		do
			why = sleep_until(&w, retry_at(&w, &busy), res);
		while (why == WOKE_TIMEOUT && still_foreign(&w, &busy));
		if (why == WOKE_SIGNAL)
			return give_up(&w, WAIT_SIGNAL);
		if (why == WOKE_SUB_LOST)
			msg_verbose("wake-up connection lost; reconnecting");
		/* Without a subscription this attempt must not queue us. */
		lr = attempt(&w, ctx->fair && w.sub.c != NULL, res, &busy);
		if (lr == LOCK_GRANTED)
			return granted(&w, start, why);
		if (lr == LOCK_ERROR)
			return give_up(&w, WAIT_ERROR);
	}
}
