// SPDX-License-Identifier: MIT
/*
 * The waiting loop. Order matters: SUBSCRIBE to the wake channel first,
 * then try, then block; a release between our try and our block is then
 * a message already queued for us, not a lost wake-up. The subscriber has
 * its own connection (a subscribed connection cannot run scripts). Reads
 * use poll() on the socket, never a socket timeout: in hiredis a timeout
 * kills the context (REDIS-NOTES section 1).
 */
#include "wait.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>

#include "exitcode.h"
#include "sig.h"
#include "util.h"

/* Wake a little after the holder's lease ends: Redis expires keys on
 * access at the exact millisecond, so a couple of ms cover our rounding. */
#define EXPIRY_SLACK_MS 3
/* Holder without expiry (a foreign client's key): back off up to this. */
#define NO_TTL_BACKOFF_MAX_MS 5000

struct waiter {
	struct conn *cn;		/* main connection: scripts */
	struct conn sub;		/* subscribed to ctx->k.wake */
	const struct lock_ctx *ctx;
	int sigfd;
	int64_t deadline;		/* INT64_MAX: forever */
	int64_t no_ttl_backoff;
	int uncertain;			/* an attempt's outcome is unknown */
};

static int
subscribe(struct waiter *w)
{
	const char *argv[2] = { "SUBSCRIBE", w->ctx->k.wake };
	size_t lens[2] = { 9, w->ctx->k.wake_len };
	redisReply *r;
	int ok;

	if (w->sub.c == NULL && conn_reopen(&w->sub) != 0)
		return -1;
	if ((r = conn_command(&w->sub, 2, argv, lens)) == NULL)
		return -1;
	ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(r->element[0]->str, "subscribe") == 0;
	if (!ok) {
		conn_fail_reply(&w->sub, "subscribe", r);
		conn_close(&w->sub);
	}
	freeReplyObject(r);
	return ok ? 0 : -1;
}

/* One attempt; reconnects once on a dropped connection (acquire is
 * idempotent per token, so repeating it is safe). */
static enum lock_result
attempt(struct waiter *w, struct wait_result *res, int64_t *pttl)
{
	enum lock_result lr;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (w->cn->c == NULL && conn_reopen(w->cn) != 0)
			return LOCK_ERROR;
		res->granted_at = mono_ms();
		lr = lock_acquire(w->cn, w->ctx, &res->fence, pttl);
		if (lr != LOCK_ERROR)
			return lr;
		if (w->cn->c != NULL)	/* an error reply, not I/O */
			return LOCK_ERROR;
		w->uncertain = 1;
	}
	return LOCK_ERROR;
}

/* Consume whatever the subscription delivered; -1 if it died. */
static int
drain_sub(struct waiter *w)
{
	void *reply = NULL;

	if (redisBufferRead(w->sub.c) != REDIS_OK)
		goto dead;
	for (;;) {
		if (redisGetReplyFromReader(w->sub.c, &reply) != REDIS_OK)
			goto dead;
		if (reply == NULL)
			return 0;
		freeReplyObject(reply);
	}
dead:
	conn_close(&w->sub);
	return -1;
}

static int64_t
block_ms(struct waiter *w, int64_t pttl)
{
	int64_t now = mono_ms(), t;

	if (pttl >= 0) {
		t = pttl + EXPIRY_SLACK_MS;
		w->no_ttl_backoff = 100;
	} else {
		t = w->no_ttl_backoff;
		if (w->no_ttl_backoff < NO_TTL_BACKOFF_MAX_MS)
			w->no_ttl_backoff *= 2;
	}
	if (w->deadline != INT64_MAX && now + t > w->deadline)
		t = w->deadline - now;
	return t < 0 ? 0 : t;
}

/*
 * Block until a wake message, the timeout, or a signal. Returns 1 woken or
 * timed out, 0 signal (res->signo), -1 subscription failed (in w->sub).
 */
static int
block(struct waiter *w, int64_t ms, struct wait_result *res)
{
	struct pollfd p[2] = {
		{ .fd = w->sigfd, .events = POLLIN },
		{ .fd = w->sub.c->fd, .events = POLLIN },
	};
	int64_t until = mono_ms() + ms;
	int n;

	for (;;) {
		int64_t left = until - mono_ms();

		n = poll(p, 2, left < 0 ? 0 : (int)(left > 60000 ? 60000 :
		    left));
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && (p[0].revents & POLLIN) &&
		    (res->signo = sig_take(w->sigfd, NULL)) != 0 &&
		    res->signo != SIGCHLD)
			return 0;
		if (n > 0 && p[1].revents)
			return drain_sub(w) < 0 ? -1 : 1;
		if (n == 0 && mono_ms() >= until)
			return 1;
	}
}

/* Undo a grant we may have received without knowing it. */
static void
cleanup(struct waiter *w)
{
	conn_close(&w->sub);
	if (!w->uncertain)
		return;
	if (w->cn->c == NULL && conn_reopen(w->cn) != 0)
		return;
	(void)lock_release(w->cn, w->ctx);
}

static enum wait_status
fail(struct waiter *w, enum wait_status st)
{
	cleanup(w);
	return st;
}

enum wait_status
wait_lock(struct conn *cn, const struct lock_ctx *ctx, int64_t wait_ms,
    int sigfd, struct wait_result *res)
{
	struct waiter w = { .cn = cn, .ctx = ctx, .sigfd = sigfd,
	    .no_ttl_backoff = 100 };
	enum lock_result lr;
	int64_t pttl = 0, start = mono_ms();
	char left[32];
	int b;

	w.deadline = wait_ms < 0 ? INT64_MAX : start + wait_ms;
	res->signo = 0;
	if ((lr = attempt(&w, res, &pttl)) == LOCK_GRANTED)
		return WAIT_GRANTED;
	if (lr == LOCK_ERROR)
		return fail(&w, WAIT_ERROR);
	if (wait_ms == 0)
		return WAIT_TIMEOUT;
	memset(&w.sub, 0, sizeof(w.sub));
	w.sub.cfg = cn->cfg;
	conn_set_timeouts(&w.sub, cn->cfg->connect_timeout_ms,
	    cn->cfg->connect_timeout_ms);
	for (;;) {
		if (w.sub.c == NULL && subscribe(&w) < 0) {
			snprintf(cn->err, sizeof(cn->err), "%s", w.sub.err);
			cn->status = w.sub.status;
			return fail(&w, WAIT_ERROR);
		}
		/* Subscribed: a release from now on reaches us. */
		if ((lr = attempt(&w, res, &pttl)) == LOCK_GRANTED) {
			conn_close(&w.sub);
			msg_verbose("acquired after %lldms of waiting",
			    (long long)(mono_ms() - start));
			return WAIT_GRANTED;
		}
		if (lr == LOCK_ERROR)
			return fail(&w, WAIT_ERROR);
		if (mono_ms() >= w.deadline)
			return fail(&w, WAIT_TIMEOUT);
		dur_format(pttl, left, sizeof(left));
		msg_verbose("held by another; lease left %s; waiting",
		    pttl >= 0 ? left : "unknown (no expiry)");
		b = block(&w, block_ms(&w, pttl), res);
		if (b == 0)
			return fail(&w, WAIT_SIGNAL);
		if (b < 0)
			msg_verbose("wake-up connection lost; resubscribing");
	}
}
