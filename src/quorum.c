// SPDX-License-Identifier: MIT
/*
 * Redlock, as the Redis docs describe it, on top of the one-server lock
 * (single.c): the same token and scripts on every master, sent to all of
 * them before any reply is read (single_send, then single_recv), so the
 * masters work at once and a round costs the slowest master's time, not
 * the sum. Each reply is awaited at most a per-master timeout far below
 * the lease (lease_master_timeout_ms), so stalled masters cost one such
 * timeout in all, however many they are.
 *
 * Fencing: each master's acquire gives max(its last + 1, its clock, the
 * fence we propose to all, at most 1 s past its clock). The holder uses
 * F = the largest of its majority and first writes F back to those of
 * that majority that drew less (fence_raise.lua). Any later majority
 * overlaps this one in some master, which can only grant after our lease
 * there ended and so after the write-back: its fence is above F. COMMAND
 * starts only after the write-back succeeded on a majority.
 */
#include "quorum.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "exitcode.h"
#include "lease.h"
#include "lua_scripts.h"
#include "script.h"
#include "sig.h"
#include "single.h"
#include "util.h"
#include "wake.h"

/* After a split vote, retry within this, at random (Redlock's advice). */
#define SPLIT_RETRY_MAX_MS 50

/*
 * The fence an acquire asks every master to draw: our clock this much
 * ahead (acquire.lua takes it unless its counter or its own clock is
 * higher). Each master drawing from its own clock, they differed (by a
 * millisecond on one machine) in a fifth to a half of the grants, and
 * each such grant cost the fence write-back, a round trip more before
 * COMMAND started.
 * Ahead, so that a master whose clock runs a little ahead of ours, or
 * that runs the script a little later, still draws ours.
 */
#define FENCE_AHEAD_MS 50

struct quorum {
	struct lock base;		/* first: a struct lock * is ours */
	struct lock *m[REDLOCK_MAX];	/* one single lock per master */
	int64_t cap;			/* each master's timeouts, max */
	/* An acquire between op_acquire_start and op_acquire_finish: when
	 * it began (0: none), what every master was asked, who was sent it. */
	int64_t t0;
	struct lock_ctx asked;
	struct mode_call call;		/* asked's acquire */
	unsigned char sent[REDLOCK_MAX];
	struct failure fail;
};

static struct quorum *
q_of(struct lock *l)
{
	return (struct quorum *)l;
}

static int
majority(const struct quorum *q)
{
	return q->base.n / 2 + 1;
}

static int
m_open(const struct lock *m)
{
	return m->ops->is_open(m);
}

static int
masters_open(const struct quorum *q)
{
	int i, up = 0;

	for (i = 0; i < q->base.n; i++)
		up += m_open(q->m[i]);
	return up;
}

static int
op_is_open(const struct lock *l)
{
	const struct quorum *q = (const struct quorum *)l;

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

	for (i = 0; i < q->base.n; i++) {
		f = q->m[i]->fail;
		if (f->why[0] == '\0' || f->status == 0)
			continue;
		if (why == NULL || f->status != RL_EXIT_UNAVAILABLE) {
			why = f;
			wi = i;
		}
	}
	url[0] = '\0';
	if (why)
		url_redacted(&server_cfg(q->base.node[wi]->srv)->ep, url,
		    sizeof(url));
	failure_set(&q->fail, why && why->status != RL_EXIT_UNAVAILABLE ?
	    why->status : RL_EXIT_UNAVAILABLE, "%s: only %d of %d masters %s "
	    "(%d needed)%s%.60s%s%.100s", what, ok, q->base.n, strcmp(what,
	    "connect") ? "answered" : "reachable", majority(q),
	    why ? "; " : "", url, why ? ": " : "", why ? why->why : "");
	/* A refused permission keeps its kind and rule: the line gives the
	 * ACL SETUSER that cures it (config_report). */
	if (why && why->kind == FAIL_NOPERM) {
		q->fail.kind = FAIL_NOPERM;
		memcpy(q->fail.acl_rule, why->acl_rule, sizeof(why->acl_rule));
	}
}

struct opening {
	struct lock *m;			/* a master to connect */
	int stop;			/* the caller's sig_stop_watch */
	pthread_t t;
	int started;
};

/* On a thread of its own, a connect's waits end at a stop signal when
 * its caller's do. */
static void *
open_master(void *arg)
{
	struct opening *o = arg;

	(void)sig_stop_watch(o->stop);
	(void)o->m->ops->open(o->m);
	return NULL;
}

/*
 * Connect every master that is not connected, all at once: each master's
 * lock and connection are its own. Every step calls it first, so a
 * master that dropped is back as soon as it answers again. One after
 * another, five masters' connects and PINGs made an uncontended --redlock
 * run cost 1.7 times one node's; at once, they cost the slowest master's,
 * and stalled masters together cost one connect timeout.
 * At once means one thread for each but the first (whose connect is this
 * thread's), unless every connect can be started first and its login
 * written and answered after (server_open_start, server_open_started):
 * then the waits overlap in this thread, under the one deadline they
 * were started with, and the 4 threads' making cost more than the
 * connects. A thread that cannot be made leaves its connect to this
 * thread, after the others: slower, never lost.
 */
static void
open_closed(struct quorum *q)
{
	struct opening o[REDLOCK_MAX];
	struct server *s[REDLOCK_MAX];
	int i, n = 0, early = 0, stop = sig_stop_fd() >= 0;

	for (i = 0; i < q->base.n; i++)
		if (!m_open(q->m[i])) {
			s[n] = q->base.node[i]->srv;
			early += server_open_start(s[n]);
			o[n].stop = stop;
			o[n++].m = q->m[i];
		}
	if (early == n) {
		if (n > 0)
			server_open_started(s, n);
		return;
	}
	for (i = 1; i < n; i++)
		o[i].started = sig_thread_create(&o[i].t, open_master,
		    &o[i]) == 0;
	open_master(&o[0]);
	for (i = 1; i < n; i++)
		if (!o[i].started)
			open_master(&o[i]);
		else
			pthread_join(o[i].t, NULL);
}

/* Connect every master that is not connected; 0 when a majority is. */
static int
op_open(struct lock *l)
{
	struct quorum *q = q_of(l);
	enum fail_kind k;
	int i, reached = 0;

	open_closed(q);
	if (op_is_open(l)) {
		failure_clear(&q->fail);
		return 0;
	}
	say_short(q, "connect", masters_open(q));
	/* No master that failed was reached (refused, a name that does
	 * not resolve, TLS): as on one server, most likely the URLs
	 * (wait_first_weather). */
	for (i = 0; i < q->base.n; i++) {
		k = q->m[i]->fail->kind;
		reached |= !m_open(q->m[i]) && k != FAIL_UNREACHABLE &&
		    k != FAIL_TLS;
	}
	if (!reached && q->fail.kind == FAIL_OTHER)
		q->fail.kind = FAIL_UNREACHABLE;
	return q->fail.status;
}

static void
op_close(struct lock *l)
{
	struct quorum *q = q_of(l);
	int i;

	for (i = 0; i < q->base.n; i++)
		q->m[i]->ops->close(q->m[i]);
}

/* Each master keeps its cap, whatever the caller asks for. */
static void
op_set_timeouts(struct lock *l, int64_t connect_ms, int64_t cmd_ms)
{
	struct quorum *q = q_of(l);
	int i;

	q->base.cmd_ms = min64(cmd_ms, q->cap);
	for (i = 0; i < q->base.n; i++)
		q->m[i]->ops->set_timeouts(q->m[i], min64(connect_ms, q->cap),
		    q->base.cmd_ms);
}

/* When the replies to what was just sent to the masters are due. */
static int64_t
answers_by(const struct quorum *q)
{
	return mono_ms() + q->base.cmd_ms;
}

static int64_t
split_retry_ms(void)
{
	unsigned short r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)mono_ms();
	return 1 + r % SPLIT_RETRY_MAX_MS;
}

/* Send c to every connected master in `to` (NULL: every one); sent[i]
 * says who got it. said[i] of those becomes -1 until answered. */
static void
send_all(struct quorum *q, const struct mode_call *c,
    const unsigned char *to, unsigned char *sent, int *said)
{
	int i;

	for (i = 0; i < q->base.n; i++) {
		sent[i] = 0;
		if (to != NULL && !to[i])
			continue;
		said[i] = -1;
		sent[i] = m_open(q->m[i]) && single_send(q->m[i], c) == 0;
	}
}

/* The answers of the masters in `sent`, each awaited until `by`: 1, 0 or
 * -1 (an error) in said[i]. */
static void
recv_all(struct quorum *q, const struct mode_call *c,
    const unsigned char *sent, int64_t by, int *said)
{
	int i;

	for (i = 0; i < q->base.n; i++)
		if (sent[i])
			said[i] = single_recv(q->m[i], c, by);
}

/* c on every connected master in `to` (NULL: every one) at once: each
 * one's answer in said[i], 1, 0 or -1 (an error, or a master not
 * connected); said[i] of a master not in `to` is left as it was. */
static void
ask_all(struct quorum *q, const struct mode_call *c, const unsigned char *to,
    int *said)
{
	unsigned char sent[REDLOCK_MAX];

	send_all(q, c, to, sent, said);
	recv_all(q, c, sent, answers_by(q), said);
}

/*
 * Write F = fence back, at once, to every master that granted and drew
 * less than F: how many of those that granted know F now. One that drew
 * F itself wrote it with its grant (the fence counter and the holder's
 * meta, in acquire.lua), so the write-back there would change nothing
 * and costs no round trip; when every master drew F (masters whose
 * clocks agree to the millisecond, such as on one machine) there is none.
 */
static int
fence_raise(struct quorum *q, const struct lock_ctx *ctx, int64_t fence,
    const unsigned char *granted, const int64_t *drew)
{
	struct mode_call c;
	unsigned char to[REDLOCK_MAX];
	int said[REDLOCK_MAX], i, raised = 0, behind = 0;

	for (i = 0; i < q->base.n; i++) {
		to[i] = granted[i] && drew[i] < fence;
		behind += to[i];
		raised += granted[i] && !to[i];
	}
	if (behind == 0)
		return raised;
	mode_start(&c, "fence_raise", &lua_fence_raise);
	FENCE_RAISE_KEYS(&c.a, &ctx->k);
	script_arg_str(&c.a, FENCE_RAISE_A_TOKEN, ctx->token);
	mode_arg_num(&c, FENCE_RAISE_A_FENCE, fence);
	mode_arg_num(&c, FENCE_RAISE_A_FENCE_TTL_MS, FENCE_TTL_MS);
	script_args_done(&c.a);
	ask_all(q, &c, to, said);
	for (i = 0; i < q->base.n; i++)
		raised += to[i] && said[i] == 1;
	return raised;
}

/*
 * Read the answers of the masters in `sent` as they come in, until `need`
 * of them answered (an error is no answer), or until `until` (each read
 * itself awaited until `by`): each one read leaves sent[] for said[].
 * Read, not just seen readable: a server that had not cached the script
 * answers NOSCRIPT at once, and the script runs only on the EVAL that
 * follows.
 */
static void
recv_some(struct quorum *q, const struct mode_call *c, unsigned char *sent,
    int need, int64_t until, int64_t by, int *said)
{
	struct pollfd p[REDLOCK_MAX + 1];
	struct server *s;
	int64_t left;
	int at[REDLOCK_MAX], i, n, got = 0;

	for (;;) {
		for (i = 0, n = 0; i < q->base.n && got < need; i++) {
			if (!sent[i])
				continue;
			s = q->base.node[i]->srv;
			if (server_fd(s) >= 0 && !server_pending(s)) {
				p[n].fd = server_fd(s);
				p[n].events = POLLIN;
				p[n].revents = 0;
				at[n++] = i;
				continue;
			}
			said[i] = single_recv(q->m[i], c, by);
			sent[i] = 0;
			got += said[i] >= 0;
		}
		left = until - mono_ms();
		if (got >= need || n == 0 || left <= 0)
			return;
		/* An error costs only the order: recv_all reads the rest
		 * (a stop signal: each read ends at once). */
		if (sig_poll(p, (nfds_t)n, deadline_poll_ms(until)) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < n && got < need; i++) {
			if (p[i].revents == 0)
				continue;
			said[at[i]] = single_recv(q->m[at[i]], c, by);
			sent[at[i]] = 0;
			got += said[at[i]] >= 0;
		}
	}
}

/* Undo a partial grant on every master still connected, those that
 * said busy included (Redlock's step 3), waking nobody (undo.lua). One
 * whose answer timed out was closed (a reset socket) and may still have
 * applied the acquire: that grant nobody uses lapses with the lease, or
 * is undone by our next attempt, as acquire and release are idempotent
 * per token. */
static void
undo(struct quorum *q, const struct lock_ctx *ctx)
{
	struct mode_call c;
	int said[REDLOCK_MAX];

	mode_start(&c, "undo", &lua_undo);
	UNDO_KEYS(&c.a, &ctx->k);
	script_arg_str(&c.a, UNDO_A_TOKEN, ctx->token);
	script_args_done(&c.a);
	ask_all(q, &c, NULL, said);
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
 * Acquire on every master with one token, sent to all before any answer
 * is read (op_acquire_finish reads them).
 */
static int
op_acquire_start(struct lock *l, const struct lock_ctx *ctx, int queue,
    int want_holder)
{
	struct quorum *q = q_of(l);
	int i;

	(void)queue;
	q->t0 = mono_ms();
	open_closed(q);
	q->asked = *ctx;
	q->asked.fence_proposed = wall_ms() + FENCE_AHEAD_MS;
	/* A skip is recorded on every master that answers (lock_record),
	 * not by the masters that happen to find KEY held. */
	q->asked.skip_count = 0;
	ctx->mode->acquire(&q->call, &q->asked, 0, want_holder);
	for (i = 0; i < q->base.n; i++)
		q->sent[i] = m_open(q->m[i]) &&
		    single_send(q->m[i], &q->call) == 0;
	return 0;
}

/*
 * Granted when a majority said yes and, fences raised, within the
 * validity time (lease - elapsed - drift). Anything less is undone on
 * every master. A split vote is LOCK_BUSY with a short random wait.
 */
static enum lock_result
op_acquire_finish(struct lock *l, const struct lock_ctx *ctx, int64_t *fence,
    struct lock_busy *busy)
{
	struct quorum *q = q_of(l);
	int i, n = q->base.n, got = 0, errs = 0, own = -1, raised;
	int64_t t0 = q->t0, f, best = 0, by, drew[REDLOCK_MAX];
	unsigned char granted[REDLOCK_MAX] = { 0 };
	struct lock_busy b;
	int have_busy = 0;

	q->t0 = 0;
	by = answers_by(q);
	for (i = 0; i < n; i++) {
		struct lock *m = q->m[i];

		if (!q->sent[i]) {
			errs++;
			continue;
		}
		switch (single_recv_acquire(m, &q->call, by, &f, &b)) {
		case LOCK_GRANTED:
			granted[i] = 1;
			drew[i] = f;
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
			if (m->fail->kind == FAIL_SCRIPT)
				own = i;
			break;
		}
	}
	if (got >= majority(q) && own < 0) {
		raised = fence_raise(q, ctx, best, granted, drew);
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
		q->fail = *q->m[own]->fail;
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

/* Between op_acquire_start and op_acquire_finish: when it was sent. */
static int
op_acquire_pending(struct lock *l, int64_t *sent_at)
{
	struct quorum *q = q_of(l);

	if (q->t0 == 0)
		return 0;
	if (sent_at != NULL)
		*sent_at = q->t0;
	return 1;
}

static void
count(const struct quorum *q, const int *said, int *yes, int *no)
{
	int i;

	*yes = *no = 0;
	for (i = 0; i < q->base.n; i++) {
		*yes += said[i] == 1;
		*no += said[i] == 0;
	}
}

/*
 * c (an extend or the re-entry check) on every connected master, after
 * trying the dropped ones again: 1 yes on a majority, 0 no (too many
 * masters say not ours), -1 undecided (errors): try again before the
 * deadline.
 */
static int
by_majority(struct quorum *q, const struct mode_call *c, int extend)
{
	int said[REDLOCK_MAX], yes, no;

	open_closed(q);
	ask_all(q, c, NULL, said);
	count(q, said, &yes, &no);
	if (yes >= majority(q))
		return 1;
	if (no > q->base.n - majority(q))
		return 0;
	/* An extend counts the masters that extended; a check, all that
	 * answered. */
	say_short(q, c->what, extend ? yes : yes + no);
	return -1;
}

static int
op_extend(struct lock *l, const struct lock_ctx *ctx)
{
	struct mode_call c;

	ctx->mode->extend(&c, ctx);
	return by_majority(q_of(l), &c, 1);
}

/*
 * A waiter blocks on one master only (op_waker), and a master where KEY
 * was not ours any more (it restarted empty, or our lease there ran out)
 * got no wake token from our release: leave one there, or a waiter
 * blocked on it would sleep until the lease we just gave up ends. A
 * failure here costs such a waiter only that sleep.
 */
static void
wake_where_lost(struct quorum *q, const struct lock_ctx *ctx, const int *said)
{
	struct mode_call c;
	unsigned char to[REDLOCK_MAX];
	int woke[REDLOCK_MAX], i;

	mode_start(&c, "wake", &lua_wake);
	WAKE_KEYS(&c.a, &ctx->k);
	mode_arg_num(&c, WAKE_A_LIMIT, ctx->limit);
	mode_arg_num(&c, WAKE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	script_args_done(&c.a);
	for (i = 0; i < q->base.n; i++)
		to[i] = said[i] == 0;
	ask_all(q, &c, to, woke);
}

/*
 * Released on every master that answers: 1, 0 not ours on a majority,
 * -1 not known (errors). The master waiters block on (the first
 * connected: op_waker) is sent our release last, once enough of the
 * others answered that it makes a majority with them: its release leaves
 * the wake token, and the waiter it wakes must find a majority free
 * already. Released all at once, the woken waiter's attempt could reach
 * masters before our release there, draw a split vote, and sleep its
 * random pause (up to SPLIT_RETRY_MAX_MS): the slow hand-offs of a
 * Redlock. Waiting for a majority, not for all, keeps the slowest masters
 * (far away, or silent: half a per-master timeout at most) out of every
 * hand-off; all answers share one deadline, so stalled masters still cost
 * the release one timeout in all (a master that answered NOSCRIPT is then
 * sent the script, which has a timeout of its own). The order costs the
 * release about one round trip.
 */
static int
op_release(struct lock *l, const struct lock_ctx *ctx)
{
	struct quorum *q = q_of(l);
	int said[REDLOCK_MAX], done, lost, i, again = 0, waker = -1;
	unsigned char was_open[REDLOCK_MAX], to[REDLOCK_MAX] = { 0 };
	unsigned char sent[REDLOCK_MAX];
	struct mode_call c;
	int64_t by;

	ctx->mode->release(&c, ctx);
	open_closed(q);
	for (i = 0; i < q->base.n; i++) {
		was_open[i] = m_open(q->m[i]);
		said[i] = -1;
		if (was_open[i] && waker < 0)
			waker = i;
		to[i] = i != waker;
	}
	send_all(q, &c, to, sent, said);
	by = answers_by(q);
	if (waker >= 0) {
		recv_some(q, &c, sent, majority(q) - 1,
		    mono_ms() + q->base.cmd_ms / 2, by, said);
		sent[waker] = m_open(q->m[waker]) &&
		    single_send(q->m[waker], &c) == 0;
	}
	recv_all(q, &c, sent, by, said);
	count(q, said, &done, &lost);
	/* Undecided, because a master's connection turned out to be dead (it
	 * restarted since our last command there), which counts as neither
	 * ours nor lost: ask it again at once on a new connection, or a lock
	 * left on a minority (2 of 5 ours, 2 not, 1 dead) would pass for
	 * released. */
	for (i = 0; i < q->base.n; i++) {
		to[i] = done < majority(q) && lost <= q->base.n - majority(q) &&
		    was_open[i] && !m_open(q->m[i]) &&
		    q->m[i]->ops->open(q->m[i]) == 0;
		again += to[i];
	}
	if (again) {
		ask_all(q, &c, to, said);
		count(q, said, &done, &lost);
	}
	if (lost > q->base.n - majority(q))
		return 0;
	if (done + lost < majority(q)) {
		say_short(q, "release", done + lost);
		return -1;
	}
	if (lost > 0)
		wake_where_lost(q, ctx, said);
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

	for (i = 0; i < q->base.n; i++)
		if (m_open(m = q->m[i]) &&
		    m->ops->record(m, ctx, end, fence) == 0)
			ok++;
	if (ok == 0)
		say_short(q, "record", 0);
	return ok > 0 ? 0 : -1;
}

static int
op_is_ours(struct lock *l, const struct lock_ctx *ctx)
{
	struct mode_call c;

	ctx->mode->is_ours(&c, ctx);
	return by_majority(q_of(l), &c, 0);
}

/* Who holds it, by the first master that answers. */
static void
op_describe_holder(struct lock *l, const struct lock_ctx *ctx, char *buf,
    size_t len)
{
	struct quorum *q = q_of(l);
	int i;

	snprintf(buf, len, "another client");
	for (i = 0; i < q->base.n && !m_open(q->m[i]); i++)
		;
	if (i < q->base.n)
		q->m[i]->ops->describe_holder(q->m[i], ctx, buf, len);
}

/*
 * A release leaves one wake token in P{KEY}:tok on every master
 * (release.lua, or wake_where_lost), so one master is enough to block
 * on: BLPOP there, on the first master connected, and Redis hands the
 * token to the one waiter that has waited longest, as on one server; the
 * others sleep on, instead of every waiter waking on every master and
 * splitting the votes. Waiters that list the masters in the same order
 * all block on the same one. The other masters' idle connections are
 * watched: once fewer than a majority are left, the wait ends at once,
 * as no grant is possible then.
 */
static struct waker *
op_waker(struct lock *l, const struct lock_ctx *ctx, int want_holder)
{
	struct quorum *q = q_of(l);
	struct server *s[REDLOCK_MAX];
	int i;

	(void)want_holder;
	for (i = 0; i < q->base.n; i++)
		s[i] = q->base.node[i]->srv;
	return wake_pop_any(s, q->base.n, majority(q), ctx->k.tokens,
	    ctx->k.tokens_len);
}

static void
op_free(struct lock *l)
{
	struct quorum *q = q_of(l);
	int i;

	for (i = 0; i < q->base.n; i++)
		q->m[i]->ops->free(q->m[i]);
	free(q);
}

static const struct lock_ops QUORUM_OPS = {
	.open = op_open,
	.close = op_close,
	.is_open = op_is_open,
	.set_timeouts = op_set_timeouts,
	.acquire_start = op_acquire_start,
	.acquire_finish = op_acquire_finish,
	.acquire_pending = op_acquire_pending,
	.extend = op_extend,
	.release = op_release,
	.record = op_record,
	.is_ours = op_is_ours,
	/* No heartbeat, dequeue: --fair is refused with --redlock (cli.c).
	 * No caps, look_foreign, recheck, watch_fd: a quorum tries where one
	 * server's waiters look (its busy replies already come from every
	 * master), and watches no sentinel and no one connection. */
	.describe_holder = op_describe_holder,
	.waker = op_waker,
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
	q->base.fail = &q->fail;
	q->cap = master_ms;
	q->base.cmd_ms = t;
	q->base.connect_ms = connect_ms;
	q->base.n = n > REDLOCK_MAX ? REDLOCK_MAX : n;
	for (i = 0; i < q->base.n; i++) {
		q->m[i] = single_new(&cfgs[i], t, t);
		q->base.node[i] = q->m[i]->node[0];
	}
	return &q->base;
}
