// SPDX-License-Identifier: MIT
/*
 * Redlock, as the Redis docs describe it, on top of the one-server lock
 * (single.c), which it uses as it is: the same token and scripts on every
 * master, one at a time (loopback showed no gain from multiplexing,
 * REDIS-NOTES section 6), each master bounded by a per-master timeout far
 * below the lease (lease_master_timeout_ms), so a stalled master costs
 * one such timeout.
 *
 * Fencing: each master's acquire gives max(its last + 1, its clock). The
 * holder uses F = the largest of its majority and first writes F back to
 * that majority (fence_raise.lua). Any later majority overlaps this one
 * in some master, which can only grant after our lease there ended and so
 * after the write-back: its fence is above F. COMMAND starts only after
 * the write-back succeeded on a majority.
 */
#include "quorum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "exitcode.h"
#include "lease.h"
#include "lua_scripts.h"
#include "script.h"
#include "single.h"
#include "util.h"

/* After a split vote, retry within this, at random (Redlock's advice). */
#define SPLIT_RETRY_MAX_MS 50

struct quorum {
	struct lock base;		/* first: a struct lock * is ours */
	struct lock *m[QUORUM_MAX];	/* one single lock per master */
	int n;
	const struct conn_cfg *cfgs;
	int64_t cap;			/* each master's timeouts, at most */
	struct failure fail;
};

static struct quorum *
q_of(struct lock *l)
{
	return (struct quorum *)l;
}

static const struct quorum *
cq_of(const struct lock *l)
{
	return (const struct quorum *)l;
}

static int
majority(const struct quorum *q)
{
	return q->n / 2 + 1;
}

static int
m_open(const struct lock *m)
{
	return m->ops->is_open(m);
}

static const struct failure *
m_fail(const struct lock *m)
{
	return m->ops->failure(m);
}

static int
masters_open(const struct quorum *q)
{
	int i, up = 0;

	for (i = 0; i < q->n; i++)
		up += m_open(q->m[i]);
	return up;
}

static int
op_is_open(const struct lock *l)
{
	const struct quorum *q = cq_of(l);

	return masters_open(q) >= majority(q);
}

/* The worst failure among the masters, for the exit status: a refusal
 * of our credentials or an unusable answer says more than a timeout. */
static void
say_short(struct quorum *q, const char *what, int ok)
{
	const struct failure *why = NULL, *f;
	int i, wi = -1;
	char url[300];

	for (i = 0; i < q->n; i++) {
		f = m_fail(q->m[i]);
		if (f->why[0] == '\0' || f->status == 0)
			continue;
		if (why == NULL || f->status != RL_EXIT_UNAVAILABLE) {
			why = f;
			wi = i;
		}
	}
	url[0] = '\0';
	if (why)
		url_redacted(&q->cfgs[wi].ep, url, sizeof(url));
	failure_set(&q->fail, why && why->status != RL_EXIT_UNAVAILABLE ?
	    why->status : RL_EXIT_UNAVAILABLE, "%s: only %d of %d masters %s "
	    "(%d needed)%s%.60s%s%.100s", what, ok, q->n, strcmp(what,
	    "connect") ? "answered" : "reachable", majority(q),
	    why ? "; " : "", url, why ? ": " : "", why ? why->why : "");
}

/* Connect every master that is not connected; 0 when a majority is. */
static int
op_open(struct lock *l)
{
	struct quorum *q = q_of(l);
	int i;

	for (i = 0; i < q->n; i++)
		if (!m_open(q->m[i]))
			(void)q->m[i]->ops->open(q->m[i]);
	if (op_is_open(l)) {
		failure_clear(&q->fail);
		return 0;
	}
	say_short(q, "connect", masters_open(q));
	return q->fail.status;
}

static void
op_close(struct lock *l)
{
	struct quorum *q = q_of(l);
	int i;

	for (i = 0; i < q->n; i++)
		q->m[i]->ops->close(q->m[i]);
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Each master keeps its cap, whatever the caller asks for. */
static void
op_set_timeouts(struct lock *l, int64_t connect_ms, int64_t cmd_ms)
{
	struct quorum *q = q_of(l);
	int i;

	l->connect_ms = connect_ms;
	for (i = 0; i < q->n; i++)
		q->m[i]->ops->set_timeouts(q->m[i], min64(connect_ms, q->cap),
		    min64(cmd_ms, q->cap));
}

static int
fence_raise(struct lock *m, const struct lock_ctx *ctx, int64_t fence)
{
	struct server *s = m->ops->server(m, 0);
	const struct lock_keys *k = &ctx->k;
	char f[24], ttl[24];
	const char *argv[6] = { k->lock, k->fence, k->meta, ctx->token, f,
	    ttl };
	size_t lens[6] = { k->lock_len, k->fence_len, k->meta_len,
	    strlen(ctx->token), 0, 0 };
	struct reply *r;
	long long v;

	lens[4] = (size_t)snprintf(f, sizeof(f), "%lld", (long long)fence);
	lens[5] = (size_t)snprintf(ttl, sizeof(ttl), "%lld",
	    (long long)FENCE_TTL_MS);
	if ((r = script_run(s, &lua_fence_raise, 3, 3, argv, lens)) == NULL)
		return -1;
	if (reply_int(r, &v) < 0) {
		server_fail_reply(s, "fence", r);
		v = -1;
	}
	reply_free(r);
	return (int)v;
}

static int64_t
split_retry_ms(void)
{
	unsigned short r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)mono_ms();
	return 1 + r % SPLIT_RETRY_MAX_MS;
}

/* Masters that dropped are tried again; each costs at most a timeout. */
static void
reconnect_dropped(struct quorum *q)
{
	int i;

	for (i = 0; i < q->n; i++)
		if (!m_open(q->m[i]))
			(void)q->m[i]->ops->open(q->m[i]);
}

/* Undo a partial grant on every master still connected, those that
 * said busy included (Redlock's step 3). One whose answer timed out was
 * closed (a reset socket) and may still have applied the acquire: that
 * grant nobody uses lapses with the lease, or is undone by our next
 * attempt, as acquire and release are idempotent per token. */
static void
undo(struct quorum *q, const struct lock_ctx *ctx)
{
	int i;

	for (i = 0; i < q->n; i++)
		if (m_open(q->m[i]))
			(void)q->m[i]->ops->release(q->m[i], ctx);
}

/* The busy reply to pass on: the first one, with the soonest end. */
static void
merge_busy(struct lock_busy *into, const struct lock_busy *b, int first)
{
	if (first)
		*into = *b;
	else if (b->wait_ms >= 0 && (into->wait_ms < 0 ||
	    b->wait_ms < into->wait_ms))
		into->wait_ms = b->wait_ms;
}

/*
 * Acquire on every master with one token; granted when a majority said
 * yes and, fences raised, within the validity time (lease - elapsed -
 * drift). Anything less is undone on every master. A split vote is
 * LOCK_BUSY with a short random wait.
 */
static enum lock_result
op_acquire(struct lock *l, const struct lock_ctx *ctx, int queue,
    int want_holder, int64_t *fence, struct lock_busy *busy)
{
	struct quorum *q = q_of(l);
	int i, n = q->n, got = 0, errs = 0, own = -1, raised = 0;
	int64_t t0 = mono_ms(), f, best = 0;
	unsigned char granted[QUORUM_MAX] = { 0 };
	struct lock_busy b;
	int have_busy = 0;

	(void)queue;
	reconnect_dropped(q);
	for (i = 0; i < n; i++) {
		struct lock *m = q->m[i];

		if (!m_open(m)) {
			errs++;
			continue;
		}
		switch (m->ops->acquire(m, ctx, 0, want_holder && !have_busy,
		    &f, &b)) {
		case LOCK_GRANTED:
			granted[i] = 1;
			got++;
			if (f > best)
				best = f;
			break;
		case LOCK_BUSY:
			merge_busy(busy, &b, !have_busy);
			have_busy = 1;
			break;
		default:
			errs++;
			if (m_fail(m)->ours)
				own = i;
			break;
		}
	}
	if (got >= majority(q) && own < 0) {
		for (i = 0; i < n; i++)
			if (granted[i] && fence_raise(q->m[i], ctx, best) == 1)
				raised++;
		if (raised >= majority(q) && mono_ms() - t0 < ctx->lease_ms -
		    lease_drift_ms(ctx->lease_ms)) {
			*fence = best;
			return LOCK_GRANTED;
		}
		msg_verbose("a majority granted '%s' but too late or without "
		    "its fence (%d of %d); undoing", ctx->key, raised, got);
	}
	if (got > 0 || errs > 0)
		undo(q, ctx);
	if (own >= 0) {
		q->fail = *m_fail(q->m[own]);
		return LOCK_ERROR;
	}
	if (errs > n - majority(q)) {
		say_short(q, "acquire", n - errs);
		return LOCK_ERROR;
	}
	if (!have_busy) {
		memset(busy, 0, sizeof(*busy));
		busy->position = -1;
		busy->lease_left_ms = -2;	/* nobody has a majority */
	}
	/* Nobody has a majority (rivals split the masters): all undo, and
	 * each retries after its own random pause. */
	if (got > 0 || !have_busy)
		busy->wait_ms = split_retry_ms();
	return LOCK_BUSY;
}

enum tally_op { T_EXTEND, T_RELEASE, T_IS_OURS };

/* op on every connected master (after trying the dropped ones again):
 * how many said 1 and how many said 0; errors count as neither. */
static void
tally(struct quorum *q, const struct lock_ctx *ctx, enum tally_op op,
    int *yes, int *no)
{
	struct lock *m;
	int i, r;

	*yes = *no = 0;
	reconnect_dropped(q);
	for (i = 0; i < q->n; i++) {
		if (!m_open(m = q->m[i]))
			continue;
		if (op == T_EXTEND)
			r = m->ops->extend(m, ctx);
		else if (op == T_RELEASE)
			r = m->ops->release(m, ctx);
		else
			r = m->ops->is_ours(m, ctx);
		*yes += r == 1;
		*no += r == 0;
	}
}

/* 1 extended on a majority, 0 lost (too many masters say not ours), -1
 * undecided (errors): try again before the deadline. */
static int
op_extend(struct lock *l, const struct lock_ctx *ctx)
{
	struct quorum *q = q_of(l);
	int ok, lost;

	tally(q, ctx, T_EXTEND, &ok, &lost);
	if (ok >= majority(q))
		return 1;
	if (lost > q->n - majority(q))
		return 0;
	say_short(q, "extend", ok);
	return -1;
}

/* Released on every master that answers: 1, 0 not ours on a majority,
 * -1 not known (errors). */
static int
op_release(struct lock *l, const struct lock_ctx *ctx)
{
	struct quorum *q = q_of(l);
	int done, lost;

	tally(q, ctx, T_RELEASE, &done, &lost);
	if (lost > q->n - majority(q))
		return 0;
	if (done + lost < majority(q)) {
		say_short(q, "release", done + lost);
		return -1;
	}
	return 1;
}

/* Best effort on every master that answers: a record is for people to
 * read, no majority decides anything. 0 if one master took it. */
static int
op_record(struct lock *l, const struct lock_ctx *ctx,
    const struct run_end *end, int64_t fence)
{
	struct quorum *q = q_of(l);
	struct lock *m;
	int i, ok = 0;

	for (i = 0; i < q->n; i++)
		if (m_open(m = q->m[i]) &&
		    m->ops->record(m, ctx, end, fence) == 0)
			ok++;
	if (ok == 0)
		say_short(q, "record", 0);
	return ok > 0 ? 0 : -1;
}

/* Held by ctx's token on a majority: 1, 0, or -1 on errors. */
static int
op_is_ours(struct lock *l, const struct lock_ctx *ctx)
{
	struct quorum *q = q_of(l);
	int yes, no;

	tally(q, ctx, T_IS_OURS, &yes, &no);
	if (yes >= majority(q))
		return 1;
	if (no > q->n - majority(q))
		return 0;
	say_short(q, "re-entry check", yes + no);
	return -1;
}

/* --fair is refused with --redlock (cli.c): no queue to keep. */
static int
op_no_queue(struct lock *l, const struct lock_ctx *ctx)
{
	(void)l;
	(void)ctx;
	return 0;
}

/* Who holds it, by the first master that answers. */
static void
op_describe_holder(struct lock *l, const struct lock_ctx *ctx, char *buf,
    size_t len)
{
	struct quorum *q = q_of(l);
	int i;

	snprintf(buf, len, "another client");
	for (i = 0; i < q->n; i++) {
		if (!m_open(q->m[i]))
			continue;
		q->m[i]->ops->describe_holder(q->m[i], ctx, buf, len);
		return;
	}
}

/*
 * A release on any master wakes us, so listen to P{KEY}:wake on each (a
 * release publishes there on every master it frees). A master that cannot
 * be reached is left out: its silence costs nothing, as the holder's
 * lease end is our deadline anyway; but once fewer than a majority
 * listen, the wait ends, as no grant is possible then.
 */
static struct waker *
op_waker(struct lock *l, const struct lock_ctx *ctx)
{
	struct quorum *q = q_of(l);
	struct server *s[QUORUM_MAX];
	int i;

	for (i = 0; i < q->n; i++)
		s[i] = q->m[i]->ops->server(q->m[i], 0);
	return wake_sub(s, q->n, majority(q), ctx->k.wake, ctx->k.wake_len);
}

static int
op_recheck(struct lock *l)
{
	(void)l;
	return 0;
}

static int
op_watch_fd(const struct lock *l)
{
	(void)l;
	return -1;
}

static int
op_servers(const struct lock *l)
{
	return cq_of(l)->n;
}

static struct server *
op_server(struct lock *l, int i)
{
	struct quorum *q = q_of(l);

	return q->m[i]->ops->server(q->m[i], 0);
}

static const struct failure *
op_failure(const struct lock *l)
{
	return &cq_of(l)->fail;
}

static void
op_free(struct lock *l)
{
	struct quorum *q = q_of(l);
	int i;

	for (i = 0; i < q->n; i++)
		q->m[i]->ops->free(q->m[i]);
	free(q);
}

static const struct lock_ops QUORUM_OPS = {
	.open = op_open,
	.close = op_close,
	.is_open = op_is_open,
	.set_timeouts = op_set_timeouts,
	.acquire = op_acquire,
	.extend = op_extend,
	.release = op_release,
	.record = op_record,
	.is_ours = op_is_ours,
	.heartbeat = op_no_queue,
	.dequeue = op_no_queue,
	.describe_holder = op_describe_holder,
	.waker = op_waker,
	.recheck = op_recheck,
	.watch_fd = op_watch_fd,
	.servers = op_servers,
	.server = op_server,
	.failure = op_failure,
	.free = op_free,
};

struct lock *
quorum_new(const struct conn_cfg *cfgs, int n, int64_t connect_ms,
    int64_t master_ms)
{
	struct quorum *q = xcalloc(1, sizeof(*q));
	int64_t t = min64(master_ms, connect_ms);
	int i;

	q->base.ops = &QUORUM_OPS;
	q->cap = master_ms;
	q->base.connect_ms = connect_ms;
	q->base.user_connect_ms = connect_ms;
	q->cfgs = cfgs;
	q->n = n > QUORUM_MAX ? QUORUM_MAX : n;
	for (i = 0; i < q->n; i++)
		q->m[i] = single_new(&cfgs[i], t, t);
	return &q->base;
}
