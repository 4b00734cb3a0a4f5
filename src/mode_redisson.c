// SPDX-License-Identifier: MIT
/*
 * Redisson's lock (--redisson): KEY is the name a Java service passes to
 * getLock (getFairLock with --fair), and the lock is Redisson's own in
 * Redis: the hash at KEY with one field ID:THREAD, rlock's being
 * "TOKEN:1", its unlock channel, and the fair lock's queue and timeouts
 * (shared/REDISSON.md; rlock(7) tables them). Beside them, under
 * --prefix and in KEY's Cluster slot, what rlock adds: the fence
 * counter, the holder's record, the last run, a holder's notice of a
 * release --force and its fair waiters' entries. The scripts are
 * redisson_*.lua (lib/redisson.lua); no I/O here (mode.h).
 */
#include "mode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockres.h"
#include "lua_scripts.h"
#include "util.h"

/* Redisson's fairLockWaitTimeout as it ships: what each place in the
 * fair queue adds to the one before it. Every client of a fair KEY must
 * use the same, as the places are chained off each other. */
#define FAIR_WAIT_MS 300000
/* Redisson's thread number in rlock's field: one holder per token. */
#define THREAD ":1"
/* Waiters redisson_inspect.lua describes. */
#define WAITERS_SHOWN "5"

/* The scripts answer as rlock's own do, so single.c reads them alike. */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(REDISSON_ACQUIRE_BUSY_N, ACQUIRE_BUSY_N) &&
    SAME(REDISSON_ACQUIRE_BUSY_WRITER, ACQUIRE_BUSY_WRITER),
    "redisson_acquire.lua's busy reply is acquire.lua's");
_Static_assert(SAME(REDISSON_INSPECT_R_N, INSPECT_R_N) &&
    SAME(REDISSON_INSPECT_HOLDERS_N, INSPECT_HOLDERS_N) &&
    SAME(REDISSON_INSPECT_HOLDERS_COUNT, INSPECT_HOLDERS_COUNT) &&
    SAME(REDISSON_INSPECT_LAST_N, INSPECT_LAST_N),
    "redisson_inspect.lua's reply is inspect.lua's");

/*
 * Name *name (replacing rlock's) as Redisson names what belongs to KEY:
 * head, then KEY in braces (its Cluster hash tag, KEY's own slot), then
 * tail; a KEY that holds a '{' gets no braces, as Redisson's prefixName
 * adds none (the tag is then KEY's own, and the slot KEY's too).
 */
static void
rename_key(char **name, size_t *len, const char *head, const char *key,
    size_t keylen, const char *tail)
{
	size_t hl = strlen(head), tl = strlen(tail);
	int br = memchr(key, '{', keylen) == NULL;
	char *p;

	free(*name);
	*name = p = xmalloc(hl + keylen + tl + 3);
	memcpy(p, head, hl);
	p += hl;
	if (br)
		*p++ = '{';
	memcpy(p, key, keylen);
	p += keylen;
	if (br)
		*p++ = '}';
	memcpy(p, tail, tl + 1);
	*len = hl + keylen + tl + 2 * (size_t)br;
}

static void
keys(struct lock_keys *k, const char *prefix, const char *key, size_t keylen,
    const char *token)
{
	char tail[64];

	/* rlock's names for the roles Redisson's lock has no use for. */
	lock_keys_init(k, prefix, key, keylen, token);
	free(k->lock);
	k->lock = xstrndup(key, keylen);
	k->lock_len = keylen;
	rename_key(&k->fence, &k->fence_len, prefix, key, keylen, ":fence");
	rename_key(&k->meta, &k->meta_len, prefix, key, keylen, ":meta");
	rename_key(&k->last, &k->last_len, prefix, key, keylen, ":last");
	rename_key(&k->broken, &k->broken_len, prefix, key, keylen,
	    ":broken");
	rename_key(&k->waiters, &k->waiters_len, prefix, key, keylen, ":w");
	rename_key(&k->queue, &k->queue_len, "redisson_lock_queue:", key,
	    keylen, "");
	rename_key(&k->timeouts, &k->timeouts_len, "redisson_lock_timeout:",
	    key, keylen, "");
	rename_key(&k->wake, &k->wake_len, "redisson_lock__channel:", key,
	    keylen, "");
	rename_key(&k->wake_prefix, &k->wake_prefix_len,
	    "redisson_lock__channel:", key, keylen, ":");
	snprintf(tail, sizeof(tail), ":%s" THREAD, token ? token : "");
	rename_key(&k->my_wake, &k->my_wake_len, "redisson_lock__channel:",
	    key, keylen, tail);
}

/* rlock's field in the hash: "TOKEN:1". */
static const char *
field(struct mode_call *c, const struct lock_ctx *ctx)
{
	snprintf(c->field, sizeof(c->field), "%s" THREAD, ctx->token);
	return c->field;
}

static void
acquire(struct mode_call *c, const struct lock_ctx *ctx, int queue,
    int want_holder)
{
	const struct lock_keys *k = &ctx->k;
	struct script_args *a = mode_start(c, "acquire", &lua_redisson_acquire);

	(void)want_holder;
	REDISSON_ACQUIRE_KEYS(a, k);
	script_arg_str(a, REDISSON_ACQUIRE_A_FIELD, field(c, ctx));
	mode_arg_num(c, REDISSON_ACQUIRE_A_LEASE_MS, ctx->lease_ms);
	mode_arg_num(c, REDISSON_ACQUIRE_A_FENCE_TTL_MS, FENCE_TTL_MS);
	script_arg_str(a, REDISSON_ACQUIRE_A_HOST, ctx->host);
	script_arg_str(a, REDISSON_ACQUIRE_A_PID, ctx->pid);
	script_arg_str(a, REDISSON_ACQUIRE_A_USER, ctx->user);
	script_arg_str(a, REDISSON_ACQUIRE_A_CMD, ctx->cmdline);
	script_arg_str(a, REDISSON_ACQUIRE_A_FAIR, ctx->fair ? "1" : "0");
	script_arg_str(a, REDISSON_ACQUIRE_A_JOIN, queue ? "1" : "0");
	mode_arg_num(c, REDISSON_ACQUIRE_A_ALLOWANCE_MS, FAIR_WAIT_MS);
	mode_arg_num(c, REDISSON_ACQUIRE_A_LOOK_MS, HANDOFF_LOOK_MS);
	script_arg(a, REDISSON_ACQUIRE_A_WAKE, k->wake, k->wake_len);
	script_arg(a, REDISSON_ACQUIRE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	script_arg_str(a, REDISSON_ACQUIRE_A_NEEDS,
	    ctx->acl_needs ? ctx->acl_needs : "");
	script_arg_str(a, REDISSON_ACQUIRE_A_INFO, ctx->waiter_info);
	mode_arg_num(c, REDISSON_ACQUIRE_A_WAITER_TTL_MS, WAITER_TTL_MS);
	script_args_done(a);
}

static void
extend(struct mode_call *c, const struct lock_ctx *ctx)
{
	struct script_args *a = mode_start(c, "extend", &lua_redisson_extend);

	REDISSON_EXTEND_KEYS(a, &ctx->k);
	script_arg_str(a, REDISSON_EXTEND_A_FIELD, field(c, ctx));
	mode_arg_num(c, REDISSON_EXTEND_A_LEASE_MS, ctx->lease_ms);
	script_args_done(a);
}

static void
release(struct mode_call *c, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	const struct run_end *e = ctx->end;
	struct script_args *a = mode_start(c, "release", &lua_redisson_release);

	REDISSON_RELEASE_KEYS(a, k);
	script_arg_str(a, REDISSON_RELEASE_A_FIELD, field(c, ctx));
	mode_arg_num(c, REDISSON_RELEASE_A_LEASE_MS, ctx->lease_ms);
	script_arg(a, REDISSON_RELEASE_A_WAKE, k->wake, k->wake_len);
	script_arg(a, REDISSON_RELEASE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	if (e) {
		script_key(a, REDISSON_RELEASE_K_LAST, k->last, k->last_len);
		mode_arg_num(c, REDISSON_RELEASE_A_EXIT, e->exit_status);
		script_arg_str(a, REDISSON_RELEASE_A_LOST,
		    e->lease_lost ? "1" : "0");
		mode_arg_num(c, REDISSON_RELEASE_A_LAST_TTL_MS,
		    LAST_RUN_TTL_MS);
		mode_arg_num(c, REDISSON_RELEASE_A_RAN_MS, e->ran_ms);
	}
	script_args_done(a);
}

static void
is_ours(struct mode_call *c, const struct lock_ctx *ctx)
{
	struct script_args *a = mode_start(c, "re-entry check",
	    &lua_redisson_is_ours);

	REDISSON_IS_OURS_KEYS(a, &ctx->k);
	script_arg_str(a, REDISSON_IS_OURS_A_FIELD, field(c, ctx));
	script_args_done(a);
}

static void
dequeue(struct mode_call *c, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	struct script_args *a = mode_start(c, "dequeue", &lua_redisson_dequeue);

	REDISSON_DEQUEUE_KEYS(a, k);
	script_arg_str(a, REDISSON_DEQUEUE_A_FIELD, field(c, ctx));
	mode_arg_num(c, REDISSON_DEQUEUE_A_ALLOWANCE_MS, FAIR_WAIT_MS);
	script_arg(a, REDISSON_DEQUEUE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	script_args_done(a);
}

static void
inspect(struct mode_call *c, const struct lock_keys *k)
{
	struct script_args *a = mode_start(c, "inspect", &lua_redisson_inspect);

	REDISSON_INSPECT_KEYS(a, k);
	script_arg_str(a, REDISSON_INSPECT_A_WAITERS_SHOWN, WAITERS_SHOWN);
	script_args_done(a);
}

static void
force(struct mode_call *c, const struct lock_keys *k)
{
	struct script_args *a = mode_start(c, "force release",
	    &lua_redisson_force);

	REDISSON_FORCE_KEYS(a, k);
	script_arg(a, REDISSON_FORCE_A_WAKE, k->wake, k->wake_len);
	script_arg(a, REDISSON_FORCE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	mode_arg_num(c, REDISSON_FORCE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	script_args_done(a);
}

const struct lock_mode mode_redisson = {
	.name = "redisson",
	.refuses = MODE_NO_LIMIT | MODE_NO_SHARED | MODE_NO_MIN_HOLD |
	    MODE_NO_REDLOCK,
	.refused_why = "Redisson's lock has one holder at a time, on one "
	    "server, and is released when its holder ends",
	.wake = MODE_WAKE_CHANNEL,
	.stranger = "a Redisson client",
	.keys = keys,
	.acquire = acquire,
	.extend = extend,
	.release = release,
	.is_ours = is_ours,
	.dequeue = dequeue,
	.inspect = inspect,
	.force = force,
};
