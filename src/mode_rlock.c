// SPDX-License-Identifier: MIT
/*
 * rlock's own lock: a mutex, a share (-s) or a semaphore slot (-N) under
 * --prefix, its layout at the top of single.c and in rlock(7), its
 * scripts acquire.lua, extend.lua, release.lua, is_ours.lua, dequeue.lua,
 * heartbeat.lua, inspect.lua and force_release.lua. The calls only: no
 * I/O (mode.h).
 */
#include "mode.h"

#include "lockres.h"
#include "lua_scripts.h"

/* Waiters inspect.lua describes; `length` counts them all. */
#define WAITERS_SHOWN "5"

static void
acquire(struct mode_call *c, const struct lock_ctx *ctx, int queue,
    int want_holder)
{
	const struct lock_keys *k = &ctx->k;
	struct script_args *a = mode_start(c, "acquire", &lua_acquire);

	ACQUIRE_KEYS(a, k);
	script_arg_str(a, ACQUIRE_A_TOKEN, ctx->token);
	mode_arg_num(c, ACQUIRE_A_LEASE_MS, ctx->lease_ms);
	script_arg_str(a, ACQUIRE_A_HOST, ctx->host);
	script_arg_str(a, ACQUIRE_A_PID, ctx->pid);
	script_arg_str(a, ACQUIRE_A_USER, ctx->user);
	script_arg_str(a, ACQUIRE_A_CMD, ctx->cmdline);
	mode_arg_num(c, ACQUIRE_A_FENCE_TTL_MS, FENCE_TTL_MS);
	mode_arg_num(c, ACQUIRE_A_LIMIT, ctx->limit);
	script_arg_str(a, ACQUIRE_A_JOIN, queue == LOCK_REJOIN ? "2" :
	    queue ? "1" : "0");
	script_arg(a, ACQUIRE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	mode_arg_num(c, ACQUIRE_A_WAITER_TTL_MS, WAITER_TTL_MS);
	script_arg_str(a, ACQUIRE_A_WANT_HOLDER, want_holder ? "1" : "0");
	mode_arg_num(c, ACQUIRE_A_LOOK_MS, HANDOFF_LOOK_MS);
	script_arg_str(a, ACQUIRE_A_NEEDS,
	    ctx->acl_needs ? ctx->acl_needs : "");
	mode_arg_num(c, ACQUIRE_A_TURN_MS, TURN_MS);
	script_arg(a, ACQUIRE_A_WAKE, k->wake, k->wake_len);
	script_arg_str(a, ACQUIRE_A_SHARED, ctx->shared ? "1" : "0");
	mode_arg_num(c, ACQUIRE_A_WRITER_TTL_MS, WRITER_TTL_MS);
	mode_arg_num(c, ACQUIRE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	c->counts_skip = ctx->skip_count;
	script_arg_str(a, ACQUIRE_A_SKIP_TTL_MS,
	    ctx->skip_count ? mode_num(c, LAST_RUN_TTL_MS) : "");
	if (ctx->fence_proposed > 0)
		mode_arg_num(c, ACQUIRE_A_FENCE_PROPOSED, ctx->fence_proposed);
	script_args_done(a);
}

static void
is_ours(struct mode_call *c, const struct lock_ctx *ctx)
{
	struct script_args *a = mode_start(c, "re-entry check", &lua_is_ours);

	IS_OURS_KEYS(a, &ctx->k);
	script_arg_str(a, IS_OURS_A_TOKEN, ctx->token);
	mode_arg_num(c, IS_OURS_A_LIMIT, ctx->limit);
	script_arg_str(a, IS_OURS_A_SHARED, ctx->shared ? "1" : "0");
	script_args_done(a);
}

static void
extend(struct mode_call *c, const struct lock_ctx *ctx)
{
	struct script_args *a = mode_start(c, "extend", &lua_extend);

	EXTEND_KEYS(a, &ctx->k);
	script_arg_str(a, EXTEND_A_TOKEN, ctx->token);
	mode_arg_num(c, EXTEND_A_LEASE_MS, ctx->lease_ms);
	mode_arg_num(c, EXTEND_A_LIMIT, ctx->limit);
	script_arg_str(a, EXTEND_A_SHARED, ctx->shared ? "1" : "0");
	script_args_done(a);
}

/* With ctx->end, the same call records the run and applies --min-hold. */
static void
release(struct mode_call *c, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	const struct run_end *e = ctx->end;
	struct script_args *a = mode_start(c, "release", &lua_release);

	RELEASE_KEYS(a, k);
	script_arg_str(a, RELEASE_A_TOKEN, ctx->token);
	mode_arg_num(c, RELEASE_A_LIMIT, ctx->limit);
	script_arg_str(a, RELEASE_A_SHARED, ctx->shared ? "1" : "0");
	script_arg(a, RELEASE_A_WAKE, k->wake, k->wake_len);
	script_arg(a, RELEASE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	mode_arg_num(c, RELEASE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	if (e) {
		script_key(a, RELEASE_K_LAST, k->last, k->last_len);
		mode_arg_num(c, RELEASE_A_MIN_HOLD_MS, e->min_hold_ms);
		mode_arg_num(c, RELEASE_A_EXIT, e->exit_status);
		script_arg_str(a, RELEASE_A_LOST, e->lease_lost ? "1" : "0");
		mode_arg_num(c, RELEASE_A_LAST_TTL_MS, LAST_RUN_TTL_MS);
		mode_arg_num(c, RELEASE_A_RAN_MS, e->ran_ms);
	}
	script_args_done(a);
}

static void
dequeue(struct mode_call *c, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	struct script_args *a = mode_start(c, "dequeue", &lua_dequeue);

	DEQUEUE_KEYS(a, k);
	script_arg_str(a, DEQUEUE_A_TOKEN, ctx->token);
	script_arg(a, DEQUEUE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	mode_arg_num(c, DEQUEUE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	script_args_done(a);
}

static void
heartbeat(struct mode_call *c, const struct lock_ctx *ctx)
{
	struct script_args *a = mode_start(c, "heartbeat", &lua_heartbeat);

	HEARTBEAT_KEYS(a, &ctx->k);
	script_arg_str(a, HEARTBEAT_A_TOKEN, ctx->token);
	script_arg_str(a, HEARTBEAT_A_INFO, ctx->waiter_info);
	mode_arg_num(c, HEARTBEAT_A_WAITER_TTL_MS, WAITER_TTL_MS);
	script_arg_str(a, HEARTBEAT_A_SHARED, ctx->shared ? "1" : "0");
	script_args_done(a);
}

static void
inspect(struct mode_call *c, const struct lock_keys *k)
{
	struct script_args *a = mode_start(c, "inspect", &lua_inspect);

	INSPECT_KEYS(a, k);
	script_arg(a, INSPECT_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	script_arg_str(a, INSPECT_A_WAITERS_SHOWN, WAITERS_SHOWN);
	script_args_done(a);
}

static void
force(struct mode_call *c, const struct lock_keys *k)
{
	struct script_args *a = mode_start(c, "force release",
	    &lua_force_release);

	FORCE_RELEASE_KEYS(a, k);
	script_arg(a, FORCE_RELEASE_A_WAKE, k->wake, k->wake_len);
	script_arg(a, FORCE_RELEASE_A_WAKE_PREFIX, k->wake_prefix,
	    k->wake_prefix_len);
	mode_arg_num(c, FORCE_RELEASE_A_WAKE_TTL_MS, WAKE_TOKEN_TTL_MS);
	script_args_done(a);
}

const struct lock_mode mode_rlock = {
	.name = "",
	.wake = MODE_WAKE_TOKENS,
	.stranger = "another client",
	.own_layout = 1,
	.keys = lock_keys_init,
	.acquire = acquire,
	.extend = extend,
	.release = release,
	.is_ours = is_ours,
	.dequeue = dequeue,
	.heartbeat = heartbeat,
	.inspect = inspect,
	.force = force,
};
