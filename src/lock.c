// SPDX-License-Identifier: MIT
/*
 * The lock protocol. Invariants every change here MUST keep:
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
 *   P{KEY}:meta:TOKEN   hash    one -N holder, fields as :meta    PX lease
 *   P{KEY}:q            list    --fair waiters' tokens, oldest first;
 *                               may hold dead waiters until they reach
 *                               the head (a token whose :w key is gone,
 *                               or nobody listens on its wake channel)
 *   P{KEY}:w:TOKEN      string  one --fair waiter, alive while it exists
 *                               and the waiter is subscribed:
 *                               "user\x1fhost\x1fpid\x1fcmd"     PX 6 s
 *   P{KEY}:tok          list    one-shot wake tokens for plain waiters,
 *                               who BLPOP it: Redis hands each token to
 *                               the oldest blocked waiter (at most N)  PX 5 s
 *   P{KEY}:wake         channel "released" on every release
 *   P{KEY}:wake:TOKEN   channel the one --fair waiter whose turn it is
 *
 * A fair waiter's heartbeat is one plain SET of its :w key every 2 s (a
 * script would cost Redis several commands). P{KEY}:q is kept alive by the
 * holders' extends and the waiters' attempts, and expires after them.
 *
 * Each script runs atomically in Redis, so compare-then-write never races.
 */
#include "lock.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "keys.h"
#include "lua_scripts.h"
#include "quorum.h"
#include "script.h"
#include "util.h"

/* P{KEY}suffix; a KEY starting with '}' or '\' is marked (keys.h). */
static char *
key_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len)
{
	return keys_name(prefix, key, keylen, suffix, len);
}

/* key_name with suffix ":what:" + token (or ":what:" alone). */
static char *
token_key(const char *prefix, const char *key, size_t keylen,
    const char *what, const char *token, size_t *len)
{
	char suffix[64];

	snprintf(suffix, sizeof(suffix), ":%s:%s", what, token ? token : "");
	return key_name(prefix, key, keylen, suffix, len);
}

void
lock_keys_init(struct lock_keys *k, const char *prefix, const char *key,
    size_t keylen, const char *token, long limit)
{
	const char *tok = token ? token : "";

	k->lock = key_name(prefix, key, keylen, "", &k->lock_len);
	if (limit == 1)
		k->meta = key_name(prefix, key, keylen, ":meta", &k->meta_len);
	else
		k->meta = token_key(prefix, key, keylen, "meta", tok,
		    &k->meta_len);
	k->fence = key_name(prefix, key, keylen, ":fence", &k->fence_len);
	k->sem = key_name(prefix, key, keylen, ":sem", &k->sem_len);
	k->limit = key_name(prefix, key, keylen, ":limit", &k->limit_len);
	k->queue = key_name(prefix, key, keylen, ":q", &k->queue_len);
	k->waiter = token_key(prefix, key, keylen, "w", tok, &k->waiter_len);
	k->waiter_prefix = token_key(prefix, key, keylen, "w", NULL,
	    &k->waiter_prefix_len);
	k->wake = key_name(prefix, key, keylen, ":wake", &k->wake_len);
	k->tokens = key_name(prefix, key, keylen, ":tok", &k->tokens_len);
	k->wake_prefix = token_key(prefix, key, keylen, "wake", NULL,
	    &k->wake_prefix_len);
	k->my_wake = token_key(prefix, key, keylen, "wake", tok,
	    &k->my_wake_len);
}

void
lock_keys_free(struct lock_keys *k)
{
	char **all[] = { &k->lock, &k->meta, &k->fence, &k->sem, &k->limit,
	    &k->queue, &k->waiter, &k->waiter_prefix, &k->wake,
	    &k->wake_prefix, &k->my_wake, &k->tokens };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(*all[i]);
	memset(k, 0, sizeof(*k));
}

void
lock_ctx_init(struct lock_ctx *ctx, const char *prefix, const char *key,
    int64_t lease_ms, long limit, int fair, const char *token,
    char *cmdline)
{
	struct passwd *pw;
	size_t n;
	uuid_t u;

	memset(ctx, 0, sizeof(*ctx));
	if (token) {
		snprintf(ctx->token, sizeof(ctx->token), "%s", token);
	} else {
		/* uuid_generate_random reads getrandom(): a CSPRNG. */
		uuid_generate_random(u);
		uuid_unparse_lower(u, ctx->token);
	}
	lock_keys_init(&ctx->k, prefix, key, strlen(key), ctx->token, limit);
	ctx->key = key;
	ctx->lease_ms = lease_ms;
	ctx->limit = limit;
	ctx->fair = fair;
	if (gethostname(ctx->host, sizeof(ctx->host) - 1) < 0)
		snprintf(ctx->host, sizeof(ctx->host), "unknown");
	if ((pw = getpwuid(geteuid())) != NULL)
		snprintf(ctx->user, sizeof(ctx->user), "%s", pw->pw_name);
	else
		snprintf(ctx->user, sizeof(ctx->user), "%u",
		    (unsigned)geteuid());
	snprintf(ctx->pid, sizeof(ctx->pid), "%ld", (long)getpid());
	ctx->cmdline = cmdline;
	n = strlen(ctx->user) + strlen(ctx->host) + strlen(ctx->pid) +
	    strlen(cmdline) + 4;
	ctx->waiter_info = xmalloc(n);
	snprintf(ctx->waiter_info, n, "%s\x1f%s\x1f%s\x1f%s", ctx->user,
	    ctx->host, ctx->pid, cmdline);
}

void
lock_ctx_free(struct lock_ctx *ctx)
{
	lock_keys_free(&ctx->k);
	free(ctx->cmdline);
	free(ctx->waiter_info);
	ctx->cmdline = ctx->waiter_info = NULL;
}

int
lock_parse_int(const redisReply *r, long long *out)
{
	if (r->type != REDIS_REPLY_INTEGER)
		return -1;
	*out = r->integer;
	return 0;
}

/* A reply that must be an integer; -1 (and cn filled) otherwise. */
static int
int_reply(struct conn *cn, const char *what, redisReply *r,
    long long *out)
{
	if (r == NULL)
		return -1;
	if (lock_parse_int(r, out) < 0) {
		conn_fail_reply(cn, what, r);
		freeReplyObject(r);
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

/* Arguments of one script call, binary-safe. */
struct args {
	const char *v[SCRIPT_MAX_ARGS];
	size_t len[SCRIPT_MAX_ARGS];
	int n;
};

static void
arg(struct args *a, const char *s, size_t len)
{
	a->v[a->n] = s;
	a->len[a->n++] = len;
}

static void
arg_str(struct args *a, const char *s)
{
	arg(a, s, strlen(s));
}

static void
copy_str(const redisReply *r, char *buf, size_t len)
{
	size_t n = r->len < len - 1 ? r->len : len - 1;

	memcpy(buf, r->str, n);
	buf[n] = '\0';
}

/* {0, wait, pos, user, host, pid, cmd, since, now, lease left,
 * foreign}; 0 or -1. */
static int
parse_busy(const redisReply *r, struct lock_busy *b)
{
	size_t i;
	char num[24];

	if (r->elements != 11 || r->element[1]->type != REDIS_REPLY_INTEGER ||
	    r->element[2]->type != REDIS_REPLY_INTEGER ||
	    r->element[9]->type != REDIS_REPLY_INTEGER ||
	    r->element[10]->type != REDIS_REPLY_INTEGER)
		return -1;
	for (i = 3; i < 9; i++)
		if (r->element[i]->type != REDIS_REPLY_STRING)
			return -1;
	b->wait_ms = r->element[1]->integer;
	b->position = r->element[2]->integer;
	copy_str(r->element[3], b->user, sizeof(b->user));
	copy_str(r->element[4], b->host, sizeof(b->host));
	copy_str(r->element[5], b->pid, sizeof(b->pid));
	copy_str(r->element[6], b->cmd, sizeof(b->cmd));
	copy_str(r->element[7], num, sizeof(num));
	b->since_ms = strtoll(num, NULL, 10);
	copy_str(r->element[8], num, sizeof(num));
	b->now_ms = strtoll(num, NULL, 10);
	b->lease_left_ms = r->element[9]->integer;
	b->foreign = r->element[10]->integer == 1;
	return 0;
}

enum lock_result
lock_parse_acquire(const redisReply *r, int64_t *fence,
    struct lock_busy *busy)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER)
		return LOCK_ERROR;
	if (r->element[0]->integer == 1 && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_INTEGER) {
		*fence = r->element[1]->integer;
		return LOCK_GRANTED;
	}
	if (r->element[0]->integer == 0 && parse_busy(r, busy) == 0)
		return LOCK_BUSY;
	return LOCK_ERROR;
}

enum lock_result
lock_acquire(struct conn *cn, const struct lock_ctx *ctx, int queue,
    int want_holder, int64_t *fence, struct lock_busy *busy)
{
	const struct lock_keys *k = &ctx->k;
	char lease[24], fttl[24], lim[24], wttl[24], look[24];
	struct args a = { .n = 0 };
	redisReply *r;
	enum lock_result res;

	if (cn->cfg->npeers)
		return quorum_acquire(cn, ctx, want_holder, fence, busy);
	snprintf(lease, sizeof(lease), "%lld", (long long)ctx->lease_ms);
	snprintf(fttl, sizeof(fttl), "%lld", (long long)FENCE_TTL_MS);
	snprintf(lim, sizeof(lim), "%ld", ctx->limit);
	snprintf(wttl, sizeof(wttl), "%d", WAITER_TTL_MS);
	snprintf(look, sizeof(look), "%d", HANDOFF_LOOK_MS);
	arg(&a, k->lock, k->lock_len);
	arg(&a, k->meta, k->meta_len);
	arg(&a, k->fence, k->fence_len);
	arg(&a, k->sem, k->sem_len);
	arg(&a, k->limit, k->limit_len);
	arg(&a, k->queue, k->queue_len);
	arg(&a, k->waiter, k->waiter_len);
	arg_str(&a, ctx->token);
	arg_str(&a, lease);
	arg_str(&a, ctx->host);
	arg_str(&a, ctx->pid);
	arg_str(&a, ctx->user);
	arg_str(&a, ctx->cmdline);
	arg_str(&a, fttl);
	arg_str(&a, lim);
	arg_str(&a, queue ? "1" : "0");
	arg(&a, k->waiter_prefix, k->waiter_prefix_len);
	arg(&a, k->wake_prefix, k->wake_prefix_len);
	arg_str(&a, wttl);
	arg_str(&a, want_holder ? "1" : "0");
	arg_str(&a, look);
	if ((r = script_run(cn, &lua_acquire, 7, a.n - 7, a.v, a.len)) == NULL)
		return LOCK_ERROR;
	if ((res = lock_parse_acquire(r, fence, busy)) == LOCK_ERROR)
		conn_fail_reply(cn, "acquire", r);
	freeReplyObject(r);
	return res;
}

int
lock_is_ours(struct conn *cn, const struct lock_ctx *ctx)
{
	const char *argv[3] = { "GET", ctx->k.lock, NULL };
	size_t lens[3] = { 3, ctx->k.lock_len, 0 };
	redisReply *r;
	int ours;

	if (cn->cfg->npeers)
		return quorum_is_ours(cn, ctx);
	if (ctx->limit > 1) {
		argv[0] = "ZSCORE";
		argv[1] = ctx->k.sem;
		argv[2] = ctx->token;
		lens[0] = 6;
		lens[1] = ctx->k.sem_len;
		lens[2] = strlen(ctx->token);
	}
	if ((r = conn_command(cn, ctx->limit > 1 ? 3 : 2, argv, lens)) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_NIL) {
		ours = 0;
	} else if (r->type == REDIS_REPLY_STRING) {
		ours = ctx->limit > 1 || (r->len == strlen(ctx->token) &&
		    memcmp(r->str, ctx->token, r->len) == 0);
	} else {
		ours = -1;
		conn_fail_reply(cn, "re-entry check", r);
	}
	freeReplyObject(r);
	return ours;
}

int
lock_heartbeat(struct conn *cn, const struct lock_ctx *ctx)
{
	char ttl[24];
	const char *argv[5] = { "SET", ctx->k.waiter, ctx->waiter_info, "PX",
	    ttl };
	size_t lens[5];
	redisReply *r;
	int ok;

	snprintf(ttl, sizeof(ttl), "%d", WAITER_TTL_MS);
	lens[0] = 3;
	lens[1] = ctx->k.waiter_len;
	lens[2] = strlen(ctx->waiter_info);
	lens[3] = 2;
	lens[4] = strlen(ttl);
	if ((r = conn_command(cn, 5, argv, lens)) == NULL)
		return -1;
	ok = r->type == REDIS_REPLY_STATUS;
	if (!ok)
		conn_fail_reply(cn, "heartbeat", r);
	freeReplyObject(r);
	return ok ? 0 : -1;
}

int
lock_dequeue(struct conn *cn, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	struct args a = { .n = 0 };
	long long v;

	arg(&a, k->queue, k->queue_len);
	arg(&a, k->waiter, k->waiter_len);
	arg_str(&a, ctx->token);
	arg(&a, k->waiter_prefix, k->waiter_prefix_len);
	arg(&a, k->wake_prefix, k->wake_prefix_len);
	return int_reply(cn, "dequeue", script_run(cn, &lua_dequeue, 2, 3,
	    a.v, a.len), &v);
}

int
lock_holder_keys(const struct lock_keys *k, const char **argv, size_t *lens)
{
	argv[0] = k->lock, lens[0] = k->lock_len;
	argv[1] = k->meta, lens[1] = k->meta_len;
	argv[2] = k->sem, lens[2] = k->sem_len;
	argv[3] = k->limit, lens[3] = k->limit_len;
	argv[4] = k->queue, lens[4] = k->queue_len;
	return LOCK_HOLDER_KEYS;
}

static void
holder_keys(struct args *a, const struct lock_ctx *ctx)
{
	a->n += lock_holder_keys(&ctx->k, a->v + a->n, a->len + a->n);
}

int
lock_extend(struct conn *cn, const struct lock_ctx *ctx)
{
	char lease[24], lim[24];
	struct args a = { .n = 0 };
	long long v;

	if (cn->cfg->npeers)
		return quorum_extend(cn, ctx);
	snprintf(lease, sizeof(lease), "%lld", (long long)ctx->lease_ms);
	snprintf(lim, sizeof(lim), "%ld", ctx->limit);
	holder_keys(&a, ctx);
	arg_str(&a, ctx->token);
	arg_str(&a, lease);
	arg_str(&a, lim);
	if (int_reply(cn, "extend", script_run(cn, &lua_extend, 5, 3, a.v,
	    a.len), &v) < 0)
		return -1;
	return v == 1;
}

int
lock_release(struct conn *cn, const struct lock_ctx *ctx)
{
	const struct lock_keys *k = &ctx->k;
	struct args a = { .n = 0 };
	char lim[24], ttl[24];
	long long v;

	if (cn->cfg->npeers)
		return quorum_release(cn, ctx);
	snprintf(lim, sizeof(lim), "%ld", ctx->limit);
	snprintf(ttl, sizeof(ttl), "%d", WAKE_TOKEN_TTL_MS);
	holder_keys(&a, ctx);
	arg(&a, k->tokens, k->tokens_len);
	arg_str(&a, ctx->token);
	arg_str(&a, lim);
	arg(&a, k->wake, k->wake_len);
	arg(&a, k->waiter_prefix, k->waiter_prefix_len);
	arg(&a, k->wake_prefix, k->wake_prefix_len);
	arg_str(&a, ttl);
	if (int_reply(cn, "release", script_run(cn, &lua_release, 6, 6, a.v,
	    a.len), &v) < 0)
		return -1;
	return v == 1;
}

static const char *
field(const redisReply *r, const char *name)
{
	size_t i;

	for (i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, name) == 0 &&
		    r->element[i + 1]->type == REDIS_REPLY_STRING)
			return r->element[i + 1]->str;
	return NULL;
}

void
lock_describe_holder(struct conn *cn, const struct lock_keys *k, char *buf,
    size_t len)
{
	const char *argv[2] = { "HGETALL", k->meta };
	size_t lens[2] = { 7, k->meta_len };
	const char *user, *host, *pid, *cmd;
	char pcmd[80];
	redisReply *r;

	snprintf(buf, len, "another client");
	if ((r = conn_command(cn, 2, argv, lens)) == NULL)
		return;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 0) {
		freeReplyObject(r);
		argv[0] = "EXISTS";
		argv[1] = k->lock;
		lens[0] = 6;
		lens[1] = k->lock_len;
		if ((r = conn_command(cn, 2, argv, lens)) == NULL)
			return;
		if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
			snprintf(buf, len, "nobody, but it is the turn of the "
			    "next --fair waiter,");
	}
	if (r->type == REDIS_REPLY_ARRAY && (user = field(r, "user")) &&
	    (host = field(r, "host")) && (pid = field(r, "pid")) &&
	    (cmd = field(r, "cmd"))) {
		printable(cmd, strlen(cmd), pcmd, sizeof(pcmd));
		snprintf(buf, len, "%s@%s (pid %s: %s)", user, host, pid,
		    pcmd);
	}
	freeReplyObject(r);
}
