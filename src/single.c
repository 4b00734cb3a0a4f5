// SPDX-License-Identifier: MIT
/*
 * The lock protocol on one server (which Sentinel or Cluster may route:
 * server.c). Invariants every change here MUST keep:
 *
 *  - At most one token holds P{KEY} at any instant; only a script that has
 *    compared the stored token with ours may extend or delete it.
 *  - Every key written has an expiry: P{KEY} and P{KEY}:meta the lease,
 *    P{KEY}:fence FENCE_TTL_MS.
 *  - Fencing tokens strictly increase per KEY, also across expiries.
 *  - Acquire with the same token is idempotent, so an attempt whose reply
 *    was lost (timeout) can be repeated or undone by a release.
 *
 * Key layout (prefix P, default "rlock:"), all in one Cluster hash slot
 * because they share the "P{KEY}" head (P{\KEY} for a KEY that starts
 * with '}' or '\': see keys.h):
 *
 *   P{KEY}              string  mutex owner token (UUID)          PX lease
 *   P{KEY}:meta         hash    mutex holder: host pid user cmd since
 *                               lease fence                       PX lease
 *   P{KEY}:fence        string  last fencing token                PX 7 days
 *   P{KEY}:sem          zset    -N holders: token -> expiry (server ms)
 *   P{KEY}:limit        string  the N of the semaphore        with :sem
 *   P{KEY}:metas        hash    the -N holders, fields TOKEN:NAME as
 *                               :meta's NAME                  with :sem
 *   P{KEY}:q            list    --fair waiters' tokens, oldest first;
 *                               may hold dead waiters until they reach
 *                               the head (a token whose entry in :w is
 *                               gone or lapsed, or nobody listens on its
 *                               wake channel)
 *   P{KEY}:w            hash    --fair waiters: TOKEN ->
 *                               "DUE\x1fuser\x1fhost\x1fpid\x1fcmd", alive
 *                               while DUE (server ms) is ahead and the
 *                               waiter is subscribed  kept alive by them
 *   P{KEY}:turn         string  "TOKEN DUE": the --fair head whose turn
 *                               to take a free KEY ends at DUE    PX 12 s
 *   P{KEY}:tok          list    one-shot wake tokens for plain waiters,
 *                               who BLPOP it: Redis hands each token to
 *                               the oldest blocked waiter (at most N)  PX 5 s
 *   P{KEY}:broken       list    one element per holder that release
 *                               --force broke; holders BLPOP it  PX 5 s
 *   P{KEY}:last         hash    the last finished run and the runs
 *                               skipped since (lib/record.lua)  PX 40 days
 *   P{KEY}:wake         channel "released" on every release
 *   P{KEY}:wake:TOKEN   channel the one --fair waiter whose turn it is
 *                               ("turn"), and the one after it ("next")
 *
 * Every key a script touches is one of its KEYS, whatever the number of
 * holders and waiters (lib/meta.lua, lib/queue.lua). A fair waiter
 * refreshes its entry in :w (DUE 90 s ahead) every 30 s (heartbeat.lua);
 * its liveness is its subscription (for a moment after the server
 * changed under the queue, its entry alone: lib/queue.lua) and, at the
 * head, its turn (acquire.lua). P{KEY}:q is kept alive by the holders'
 * extends and the waiters' attempts, and expires after them.
 *
 * Each script runs atomically in Redis, so compare-then-write never races.
 */
#include "single.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "lua_scripts.h"
#include "mode.h"
#include "script.h"
#include "util.h"
#include "wake.h"

struct single {
	struct lock base;		/* first: a struct lock * is ours */
	struct lock_node node;		/* its server */
	/* An acquire started (acquire_start) and not finished: when it was
	 * sent (0: none), and what it asked, to read its answer with. */
	int64_t started_at;
	int started_queue, started_want;
	int started_lost;		/* its connection closed first */
	/* What the waker's BLPOP sends behind it (op_waker). */
	const struct lock_ctx *behind_ctx;
	int behind_want;
};

static struct single *
sg(struct lock *l)
{
	return (struct single *)l;
}

static struct server *
srv(const struct lock *l)
{
	return l->node[0]->srv;
}

/* An acquire started whose connection has closed since: its answer is
 * gone, its outcome unknown (lock_acquire_pending says so once). */
static void
settle(struct single *s)
{
	if (s->started_at != 0 && !server_is_open(s->node.srv)) {
		s->started_at = 0;
		s->started_lost = 1;
	}
}

/* The server, for a command of another op: an acquire started and not
 * finished would have its answer read as this command's, so its
 * connection is closed first (its outcome is then unknown). */
static struct server *
cmd_srv(struct lock *l)
{
	struct single *s = sg(l);

	settle(s);
	if (s->started_at != 0) {
		server_close(s->node.srv);
		settle(s);
	}
	return s->node.srv;
}

/* A reply that must be an integer; -1 (and s filled) otherwise. */
static int
int_reply(struct server *s, const char *what, struct reply *r,
    long long *out)
{
	if (r == NULL)
		return -1;
	if (reply_int(r, out) < 0) {
		server_fail_reply(s, what, r);
		reply_free(r);
		return -1;
	}
	reply_free(r);
	return 0;
}

static void
copy_str(const struct reply *r, char *buf, size_t len)
{
	size_t n = r->len < len - 1 ? r->len : len - 1;

	memcpy(buf, r->str, n);
	buf[n] = '\0';
}

/* acquire.lua's busy reply (its "REPLY busy" names); 0 or -1. */
static int
parse_busy(const struct reply *r, struct lock_busy *b)
{
	struct reply *const *e = r->element;
	size_t i;
	char num[24];

	if (r->elements != ACQUIRE_BUSY_N ||
	    e[ACQUIRE_BUSY_WAIT]->type != REPLY_INTEGER ||
	    e[ACQUIRE_BUSY_POSITION]->type != REPLY_INTEGER ||
	    e[ACQUIRE_BUSY_LEASE_LEFT]->type != REPLY_INTEGER ||
	    e[ACQUIRE_BUSY_FOREIGN]->type != REPLY_INTEGER ||
	    e[ACQUIRE_BUSY_ENDED]->type != REPLY_STRING ||
	    e[ACQUIRE_BUSY_WRITER]->type != REPLY_INTEGER)
		return -1;
	for (i = ACQUIRE_BUSY_USER; i <= ACQUIRE_BUSY_NOW; i++)
		if (e[i]->type != REPLY_STRING)
			return -1;
	b->wait_ms = e[ACQUIRE_BUSY_WAIT]->integer;
	b->position = e[ACQUIRE_BUSY_POSITION]->integer;
	copy_str(e[ACQUIRE_BUSY_USER], b->user, sizeof(b->user));
	copy_str(e[ACQUIRE_BUSY_HOST], b->host, sizeof(b->host));
	copy_str(e[ACQUIRE_BUSY_PID], b->pid, sizeof(b->pid));
	copy_str(e[ACQUIRE_BUSY_CMD], b->cmd, sizeof(b->cmd));
	copy_str(e[ACQUIRE_BUSY_SINCE], num, sizeof(num));
	b->since_ms = strtoll(num, NULL, 10);
	copy_str(e[ACQUIRE_BUSY_NOW], num, sizeof(num));
	b->now_ms = strtoll(num, NULL, 10);
	b->lease_left_ms = e[ACQUIRE_BUSY_LEASE_LEFT]->integer;
	b->foreign = e[ACQUIRE_BUSY_FOREIGN]->integer == 1;
	copy_str(e[ACQUIRE_BUSY_ENDED], num, sizeof(num));
	b->ended_ms = strtoll(num, NULL, 10);
	b->writer = (int)e[ACQUIRE_BUSY_WRITER]->integer;
	b->skip_counted = 0;
	return 0;
}

enum lock_result
single_parse_acquire(const struct reply *r, int64_t *fence,
    struct lock_busy *busy)
{
	if (r->type != REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REPLY_INTEGER)
		return LOCK_ERROR;
	if (r->element[0]->integer == 1 && r->elements == 2 &&
	    r->element[1]->type == REPLY_INTEGER) {
		*fence = r->element[1]->integer;
		return LOCK_GRANTED;
	}
	if (r->element[0]->integer == 0 && parse_busy(r, busy) == 0)
		return LOCK_BUSY;
	return LOCK_ERROR;
}

/* An extend, release or re-entry check's reply r (freed here): 1, 0, or
 * -1 (failure recorded). */
static int
yes_no(struct server *s, const char *what, struct reply *r)
{
	char why[200];
	long long v;

	/* release.lua's {1, why}: released, a step after it refused (an
	 * ACL changed since the grant). */
	if (r != NULL && r->type == REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REPLY_INTEGER &&
	    r->element[0]->integer == 1 &&
	    r->element[1]->type == REPLY_STRING) {
		printable(r->element[1]->str, r->element[1]->len, why,
		    sizeof(why));
		msg_warn("%s done, but Redis refused a step after it (waking "
		    "waiters, recording the run): %s", what, why);
		reply_free(r);
		return 1;
	}
	if (int_reply(s, what, r, &v) < 0)
		return -1;
	return v == 1;
}

static int
op_acquire_start(struct lock *l, const struct lock_ctx *ctx, int queue,
    int want_holder)
{
	struct single *s = sg(l);
	struct mode_call c;
	int64_t t = mono_ms();

	(void)cmd_srv(l);
	ctx->mode->acquire(&c, ctx, queue, want_holder);
	if (single_send(l, &c) < 0)
		return -1;
	s->started_at = t;
	s->started_queue = queue;
	s->started_want = want_holder;
	s->started_lost = 0;
	return 0;
}

static enum lock_result
op_acquire_finish(struct lock *l, const struct lock_ctx *ctx, int64_t *fence,
    struct lock_busy *busy)
{
	struct single *s = sg(l);
	struct mode_call c;

	settle(s);
	if (s->started_at == 0) {
		failure_set(server_failure_rw(srv(l)), RL_EXIT_UNAVAILABLE,
		    "acquire: the connection closed before its answer");
		return LOCK_ERROR;
	}
	s->started_at = 0;
	ctx->mode->acquire(&c, ctx, s->started_queue, s->started_want);
	return single_recv_acquire(l, &c, mono_ms() + l->cmd_ms,
	    fence, busy);
}

static int
op_acquire_pending(struct lock *l, int64_t *sent_at)
{
	struct single *s = sg(l);

	settle(s);
	if (s->started_lost) {
		s->started_lost = 0;
		return -1;
	}
	if (s->started_at == 0)
		return 0;
	if (sent_at != NULL)
		*sent_at = s->started_at;
	return 1;
}

/* is_ours.lua's 0, 1, or 2 (a share, asked for exclusively). */
static int
op_is_ours(struct lock *l, const struct lock_ctx *ctx)
{
	struct mode_call c;
	long long v;

	ctx->mode->is_ours(&c, ctx);
	(void)cmd_srv(l);
	if (int_reply(srv(l), c.what, script_call(srv(l), &c.a), &v) < 0)
		return -1;
	return v == 1 || v == 2 ? (int)v : 0;
}

/* Run c, a call of another op than the acquire (cmd_srv), answered
 * with an integer: 0, or -1 (failure recorded). */
static int
run_int(struct lock *l, const struct mode_call *c)
{
	struct server *s = cmd_srv(l);
	long long v;

	return int_reply(s, c->what, script_call(s, &c->a), &v);
}

/* A --fair waiter still in the queue, its entry refreshed
 * (heartbeat.lua); a mode without one keeps its place by its attempts. */
static int
op_heartbeat(struct lock *l, const struct lock_ctx *ctx)
{
	struct mode_call c;

	if (ctx->mode->heartbeat == NULL)
		return 0;
	ctx->mode->heartbeat(&c, ctx);
	return run_int(l, &c);
}

static int
op_dequeue(struct lock *l, const struct lock_ctx *ctx)
{
	struct mode_call c;

	ctx->mode->dequeue(&c, ctx);
	return run_int(l, &c);
}

static int
op_extend(struct lock *l, const struct lock_ctx *ctx)
{
	struct server *s = cmd_srv(l);
	struct mode_call c;

	ctx->mode->extend(&c, ctx);
	return yes_no(s, c.what, script_call(s, &c.a));
}

static int
op_release(struct lock *l, const struct lock_ctx *ctx)
{
	struct server *s = cmd_srv(l);
	struct mode_call c;

	ctx->mode->release(&c, ctx);
	return yes_no(s, c.what, script_call(s, &c.a));
}

int
single_send(struct lock *m, const struct mode_call *c)
{
	return script_send(srv(m), &c->a);
}

enum lock_result
single_recv_acquire(struct lock *m, const struct mode_call *c,
    int64_t deadline, int64_t *fence, struct lock_busy *busy)
{
	struct reply *r = script_recv(srv(m), &c->a, deadline);
	enum lock_result res;

	if (r == NULL)
		return LOCK_ERROR;
	if ((res = single_parse_acquire(r, fence, busy)) == LOCK_ERROR)
		server_fail_reply(srv(m), "acquire", r);
	else if (res == LOCK_BUSY)
		busy->skip_counted = c->counts_skip;
	reply_free(r);
	return res;
}

int
single_recv(struct lock *m, const struct mode_call *c, int64_t deadline)
{
	return yes_no(srv(m), c->what, script_recv(srv(m), &c->a, deadline));
}

static int
op_record(struct lock *l, const struct lock_ctx *ctx,
    const struct run_end *end, int64_t fence)
{
	struct mode_call c;
	struct script_args *a = mode_start(&c, "record", &lua_record);

	RECORD_KEYS(a, &ctx->k);
	script_arg_str(a, RECORD_A_WHAT, end ? "lost" : "skip");
	script_arg_str(a, RECORD_A_USER, ctx->user);
	script_arg_str(a, RECORD_A_HOST, ctx->host);
	script_arg_str(a, RECORD_A_PID, ctx->pid);
	script_arg_str(a, RECORD_A_CMD, ctx->cmdline);
	mode_arg_num(&c, RECORD_A_LAST_TTL_MS, LAST_RUN_TTL_MS);
	if (end) {
		mode_arg_num(&c, RECORD_A_FENCE, fence);
		mode_arg_num(&c, RECORD_A_RAN_MS, end->ran_ms);
		mode_arg_num(&c, RECORD_A_EXIT, end->exit_status);
	}
	script_args_done(a);
	return run_int(l, &c);
}

/* inspect's holder h: "user@host" into at, "pid P: cmd" into run; 0, or
 * -1 when h is not one inspect gives or rlock recorded no holder. */
static int
holder_words(const struct reply *h, char *at, size_t alen, char *run,
    size_t rlen)
{
	struct reply *const *e = h->element;
	int i;

	if (h->type != REPLY_ARRAY || h->elements != INSPECT_HOLDERS_N)
		return -1;
	for (i = INSPECT_HOLDERS_USER; i <= INSPECT_HOLDERS_HOLD_UNTIL; i++)
		if (e[i]->type != REPLY_STRING)
			return -1;
	if (e[INSPECT_HOLDERS_USER]->len == 0)
		return -1;
	snprintf(at, alen, "%s@%s", e[INSPECT_HOLDERS_USER]->str,
	    e[INSPECT_HOLDERS_HOST]->str);
	/* A run that ended, whose KEY --min-hold keeps: say so. */
	holder_run(run, rlen, e[INSPECT_HOLDERS_PID]->str,
	    e[INSPECT_HOLDERS_CMD]->str, e[INSPECT_HOLDERS_CMD]->len,
	    strtoll(e[INSPECT_HOLDERS_HOLD_UNTIL]->str, NULL, 10));
	return 0;
}

/*
 * Whom a waiter waits for, from the mode's inspect call (status's reply):
 * the holder rlock recorded; else, in rlock's own layout, the shared
 * holders (the first of them named), an exclusive request that readers
 * wait for, or a free KEY's --fair head taking its turn.
 */
static void
op_describe_holder(struct lock *l, const struct lock_ctx *ctx, char *buf,
    size_t len)
{
	struct server *s = cmd_srv(l);
	const struct reply *hs, *mode, *wr;
	struct mode_call c;
	struct reply *r;
	char at[330], run[200], named[600] = "", more[32] = "";
	int shared, writers, known;
	size_t n;

	snprintf(buf, len, "%s", ctx->mode->stranger);
	ctx->mode->inspect(&c, &ctx->k);
	if ((r = script_call_ro(s, &c.a)) == NULL)
		return;
	if (r->type != REPLY_ARRAY || r->elements != INSPECT_R_N ||
	    (mode = r->element[INSPECT_R_MODE])->type != REPLY_STRING ||
	    (hs = r->element[INSPECT_R_HOLDERS])->type != REPLY_ARRAY ||
	    (wr = r->element[INSPECT_R_WRITERS])->type != REPLY_INTEGER) {
		server_fail_reply(s, c.what, r);
		reply_free(r);
		return;
	}
	n = hs->elements;
	shared = strcmp(mode->str, "shared") == 0;
	writers = ctx->shared && wr->integer > 0;
	known = n > 0 && holder_words(hs->element[0], at, sizeof(at), run,
	    sizeof(run)) == 0;
	if (known && !shared) {
		snprintf(buf, len, "%s (%s)", at, run);
	} else if (shared && ctx->mode->own_layout) {
		if (n > 1)
			snprintf(more, sizeof(more), ", and %zu more", n - 1);
		if (known)
			snprintf(named, sizeof(named), " (%s, %s%s)", at, run,
			    more);
		snprintf(buf, len, "%zu shared holder%s%s%s", n,
		    n == 1 ? "" : "s", named,
		    writers ? "; an exclusive request is waiting" : "");
	} else if (n == 0 && ctx->mode->own_layout) {
		snprintf(buf, len, "nobody, but %s", writers ? "an exclusive "
		    "request is waiting" : "it is the turn of the next --fair "
		    "waiter,");
	}
	reply_free(r);
}

static int
op_open(struct lock *l)
{
	settle(sg(l));
	return server_is_open(srv(l)) ? 0 : server_open(srv(l));
}

static void
op_close(struct lock *l)
{
	server_close(srv(l));
	settle(sg(l));
}

static int
op_is_open(const struct lock *l)
{
	return server_is_open(srv(l));
}

static void
op_set_timeouts(struct lock *l, int64_t connect_ms, int64_t cmd_ms)
{
	l->cmd_ms = cmd_ms;
	server_set_timeouts(srv(l), connect_ms, cmd_ms);
}

/*
 * The attempt sent right behind each BLPOP that waits for the retry time
 * (wake.h): its grant counts from this send, as any grant counts from
 * before its acquire was sent (supervise.c confirms an old one).
 */
static int
send_behind(void *arg)
{
	struct lock *l = arg;

	return op_acquire_start(l, sg(l)->behind_ctx, 0, sg(l)->behind_want);
}

/*
 * A plain waiter blocks in BLPOP on P{KEY}:tok on our own connection,
 * with its next attempt sent right behind; a --fair one listens to its
 * own P{KEY}:wake:TOKEN on a connection of its own (a subscribed
 * connection cannot run scripts), and its attempt must follow a
 * subscription, not a BLPOP. Nothing is sent behind through Sentinel or
 * Cluster: a redirect or a new master would leave the attempt's reply
 * where nobody reads it.
 */
static struct waker *
op_waker(struct lock *l, const struct lock_ctx *ctx, int want_holder)
{
	struct server *s = srv(l);
	struct wake_behind behind = { send_behind, l };
	enum endpoint_kind kind = server_cfg(s)->ep.kind;
	struct waker *w;

	if (ctx->fair)
		return wake_sub(&s, 1, 1, ctx->k.my_wake, ctx->k.my_wake_len,
		    ctx->mode->wake == MODE_WAKE_CHANNEL);
	if (ctx->mode->wake == MODE_WAKE_CHANNEL)
		return wake_sub(&s, 1, 1, ctx->k.wake, ctx->k.wake_len, 1);
	sg(l)->behind_ctx = ctx;
	sg(l)->behind_want = want_holder;
	w = wake_pop(s, ctx->k.tokens, ctx->k.tokens_len,
	    kind == EP_TCP || kind == EP_UNIX ? &behind : NULL);
	/* Readers that wait for an exclusive waiter are not woken for it. */
	if (!ctx->shared && ctx->limit == 1)
		wake_pop_also(w, ctx->k.wtokens, ctx->k.wtokens_len);
	return w;
}

/* One server's waiters look at a foreign holder (a quorum tries
 * instead); behind Sentinel, they ask whether the master moved. */
static int
op_caps(const struct lock *l)
{
	return LOCK_CAN_LOOK | (server_cfg(srv(l))->ep.kind == EP_SENTINEL ?
	    LOCK_FAILOVER : 0);
}

/*
 * A holder that is not rlock (a redis-py or node-redlock lock on P{KEY},
 * without :meta) wakes nobody at its release, so its waiters look every
 * FOREIGN_LOOK_MS whether it is gone: one EXISTS, the cheapest command
 * that tells "gone" and "rlock's now" from "still foreign".
 */
static int
op_look_foreign(struct lock *l, const struct lock_ctx *ctx)
{
	struct server *s = cmd_srv(l);
	const char *argv[3] = { "EXISTS", ctx->k.lock, ctx->k.meta };
	size_t lens[3] = { 6, ctx->k.lock_len, ctx->k.meta_len };
	long long n;

	if (int_reply(s, "EXISTS", server_command(s, 3, argv, lens), &n) < 0)
		return -1;
	/* 2: rlock's holder now, 0: gone. 1 is the lock alone (a meta left
	 * without its lock cannot outlive the lease it shares). */
	return n == 1;
}

static int
op_recheck(struct lock *l)
{
	return server_recheck(srv(l));
}

static int
op_watch_fd(const struct lock *l)
{
	return server_fd(srv(l));
}

static void
op_free(struct lock *l)
{
	server_free(srv(l));
	free(l);
}

static const struct lock_ops SINGLE_OPS = {
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
	.heartbeat = op_heartbeat,
	.dequeue = op_dequeue,
	.describe_holder = op_describe_holder,
	.waker = op_waker,
	.caps = op_caps,
	.look_foreign = op_look_foreign,
	.recheck = op_recheck,
	.watch_fd = op_watch_fd,
	.free = op_free,
};

struct lock *
single_new(const struct conn_cfg *cfg, int64_t connect_ms, int64_t cmd_ms)
{
	struct single *s = xcalloc(1, sizeof(*s));

	s->base.ops = &SINGLE_OPS;
	s->base.connect_ms = connect_ms;
	s->base.cmd_ms = cmd_ms;
	s->node.srv = server_new(cfg, connect_ms, cmd_ms);
	s->base.fail = server_failure(s->node.srv);
	s->base.n = 1;
	s->base.node[0] = &s->node;
	return &s->base;
}
