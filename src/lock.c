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
 * because they share the "P{KEY}" head:
 *
 *   P{KEY}         string   owner token (UUID)         PX lease
 *   P{KEY}:meta    hash     host pid user cmd since lease fence   PX lease
 *   P{KEY}:fence   string   last fencing token         PX 7 days
 *   P{KEY}:wake    channel  "released" is published on release
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

#include "lua_scripts.h"
#include "script.h"
#include "util.h"

static char *
key_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	char *s = xmalloc(pl + keylen + sl + 3);

	memcpy(s, prefix, pl);
	s[pl] = '{';
	memcpy(s + pl + 1, key, keylen);
	s[pl + 1 + keylen] = '}';
	memcpy(s + pl + 2 + keylen, suffix, sl + 1);
	*len = pl + keylen + sl + 2;
	return s;
}

void
lock_keys_init(struct lock_keys *k, const char *prefix, const char *key,
    size_t keylen)
{
	k->lock = key_name(prefix, key, keylen, "", &k->lock_len);
	k->meta = key_name(prefix, key, keylen, ":meta", &k->meta_len);
	k->fence = key_name(prefix, key, keylen, ":fence", &k->fence_len);
	k->sem = key_name(prefix, key, keylen, ":sem", &k->sem_len);
	k->wake = key_name(prefix, key, keylen, ":wake", &k->wake_len);
}

void
lock_keys_free(struct lock_keys *k)
{
	free(k->lock);
	free(k->meta);
	free(k->fence);
	free(k->sem);
	free(k->wake);
	memset(k, 0, sizeof(*k));
}

void
lock_ctx_init(struct lock_ctx *ctx, const char *prefix, const char *key,
    int64_t lease_ms, const char *token, char *cmdline)
{
	struct passwd *pw;
	uuid_t u;

	memset(ctx, 0, sizeof(*ctx));
	lock_keys_init(&ctx->k, prefix, key, strlen(key));
	if (token) {
		snprintf(ctx->token, sizeof(ctx->token), "%s", token);
	} else {
		/* uuid_generate_random reads getrandom(): a CSPRNG. */
		uuid_generate_random(u);
		uuid_unparse_lower(u, ctx->token);
	}
	ctx->lease_ms = lease_ms;
	if (gethostname(ctx->host, sizeof(ctx->host) - 1) < 0)
		snprintf(ctx->host, sizeof(ctx->host), "unknown");
	if ((pw = getpwuid(geteuid())) != NULL)
		snprintf(ctx->user, sizeof(ctx->user), "%s", pw->pw_name);
	else
		snprintf(ctx->user, sizeof(ctx->user), "%u",
		    (unsigned)geteuid());
	snprintf(ctx->pid, sizeof(ctx->pid), "%ld", (long)getpid());
	ctx->cmdline = cmdline;
}

void
lock_ctx_free(struct lock_ctx *ctx)
{
	lock_keys_free(&ctx->k);
	free(ctx->cmdline);
	ctx->cmdline = NULL;
}

/* A reply that must be an integer; -1 (and cn filled) otherwise. */
static int
int_reply(struct conn *cn, const char *what, redisReply *r,
    long long *out)
{
	if (r == NULL)
		return -1;
	if (r->type != REDIS_REPLY_INTEGER) {
		conn_fail_reply(cn, what, r);
		freeReplyObject(r);
		return -1;
	}
	*out = r->integer;
	freeReplyObject(r);
	return 0;
}

enum lock_result
lock_acquire(struct conn *cn, const struct lock_ctx *ctx, int64_t *fence,
    int64_t *pttl)
{
	char lease[24], fttl[24];
	const char *argv[11] = {
		ctx->k.lock, ctx->k.meta, ctx->k.fence, ctx->k.sem,
		ctx->token, lease, ctx->host, ctx->pid, ctx->user,
		ctx->cmdline, fttl
	};
	size_t lens[11];
	redisReply *r;
	int i;

	snprintf(lease, sizeof(lease), "%lld", (long long)ctx->lease_ms);
	snprintf(fttl, sizeof(fttl), "%lld", (long long)FENCE_TTL_MS);
	lens[0] = ctx->k.lock_len;
	lens[1] = ctx->k.meta_len;
	lens[2] = ctx->k.fence_len;
	lens[3] = ctx->k.sem_len;
	for (i = 4; i < 11; i++)
		lens[i] = strlen(argv[i]);
	if ((r = script_run(cn, &lua_acquire, 4, 7, argv, lens)) == NULL)
		return LOCK_ERROR;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER) {
		conn_fail_reply(cn, "acquire", r);
		freeReplyObject(r);
		return LOCK_ERROR;
	}
	if (r->element[0]->integer == 1) {
		*fence = r->element[1]->integer;
		freeReplyObject(r);
		return LOCK_GRANTED;
	}
	*pttl = r->element[1]->integer;
	freeReplyObject(r);
	return LOCK_BUSY;
}

int
lock_extend(struct conn *cn, const struct lock_ctx *ctx)
{
	char lease[24];
	const char *argv[4] = { ctx->k.lock, ctx->k.meta, ctx->token, lease };
	size_t lens[4];
	long long v;

	snprintf(lease, sizeof(lease), "%lld", (long long)ctx->lease_ms);
	lens[0] = ctx->k.lock_len;
	lens[1] = ctx->k.meta_len;
	lens[2] = strlen(ctx->token);
	lens[3] = strlen(lease);
	if (int_reply(cn, "extend", script_run(cn, &lua_extend, 2, 2, argv,
	    lens), &v) < 0)
		return -1;
	return v == 1;
}

int
lock_release(struct conn *cn, const struct lock_ctx *ctx)
{
	const char *argv[4] = {
		ctx->k.lock, ctx->k.meta, ctx->token, ctx->k.wake
	};
	size_t lens[4] = {
		ctx->k.lock_len, ctx->k.meta_len, strlen(ctx->token),
		ctx->k.wake_len
	};
	long long v;

	if (int_reply(cn, "release", script_run(cn, &lua_release, 2, 2, argv,
	    lens), &v) < 0)
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
	if (r->type == REDIS_REPLY_ARRAY && (user = field(r, "user")) &&
	    (host = field(r, "host")) && (pid = field(r, "pid")) &&
	    (cmd = field(r, "cmd"))) {
		printable(cmd, strlen(cmd), pcmd, sizeof(pcmd));
		snprintf(buf, len, "%s@%s (pid %s: %s)", user, host, pid,
		    pcmd);
	}
	freeReplyObject(r);
}
