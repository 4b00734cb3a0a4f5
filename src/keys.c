// SPDX-License-Identifier: MIT
/*
 * The names of a lock's keys and channels, and who holds: see keys.h and
 * the key layout at the top of single.c.
 */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int
marked(const char *key, size_t keylen)
{
	return keylen > 0 && (key[0] == '}' || key[0] == '\\');
}

char *
keys_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), m;
	char *s = xmalloc(pl + keylen + sl + 4), *p = s;

	m = marked(key, keylen);
	memcpy(p, prefix, pl);
	p += pl;
	*p++ = '{';
	if (m)
		*p++ = '\\';
	memcpy(p, key, keylen);
	p += keylen;
	*p++ = '}';
	memcpy(p, suffix, sl + 1);
	*len = pl + m + keylen + 2 + sl;
	return s;
}

const char *
keys_parse(const char *prefix, const char *name, size_t len,
    const char *suffix, size_t *keylen)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), kl;
	const char *key = name + pl + 1;

	if (len < pl + sl + 3 || memcmp(name, prefix, pl) != 0 ||
	    name[pl] != '{' || name[len - sl - 1] != '}' ||
	    memcmp(name + len - sl, suffix, sl) != 0)
		return NULL;
	kl = len - pl - sl - 2;
	if (key[0] == '\\') {
		key++;
		kl--;
		if (!marked(key, kl))
			return NULL;
	} else if (marked(key, kl)) {
		return NULL;
	}
	*keylen = kl;
	return kl > 0 ? key : NULL;
}

int
keys_bad_prefix(const char *prefix)
{
	const char *b = strchr(prefix, '{');

	return b != NULL && b[1] == '}';
}

void
lock_keys_init(struct lock_keys *k, const char *prefix, const char *key,
    size_t keylen, const char *token)
{
	char my_wake[64];

	memset(k, 0, sizeof(*k));
	k->lock = keys_name(prefix, key, keylen, "", &k->lock_len);
	k->meta = keys_name(prefix, key, keylen, ":meta", &k->meta_len);
	k->metas = keys_name(prefix, key, keylen, ":metas", &k->metas_len);
	k->fence = keys_name(prefix, key, keylen, ":fence", &k->fence_len);
	k->sem = keys_name(prefix, key, keylen, ":sem", &k->sem_len);
	k->limit = keys_name(prefix, key, keylen, ":limit", &k->limit_len);
	k->queue = keys_name(prefix, key, keylen, ":q", &k->queue_len);
	k->waiters = keys_name(prefix, key, keylen, ":w", &k->waiters_len);
	k->wake = keys_name(prefix, key, keylen, ":wake", &k->wake_len);
	k->last = keys_name(prefix, key, keylen, ":last", &k->last_len);
	k->tokens = keys_name(prefix, key, keylen, ":tok", &k->tokens_len);
	k->turn = keys_name(prefix, key, keylen, ":turn", &k->turn_len);
	k->broken = keys_name(prefix, key, keylen, ":broken", &k->broken_len);
	k->shares = keys_name(prefix, key, keylen, ":sh", &k->shares_len);
	k->writers = keys_name(prefix, key, keylen, ":xw", &k->writers_len);
	k->wtokens = keys_name(prefix, key, keylen, ":xtok", &k->wtokens_len);
	k->wake_prefix = keys_name(prefix, key, keylen, ":wake:",
	    &k->wake_prefix_len);
	snprintf(my_wake, sizeof(my_wake), ":wake:%s", token ? token : "");
	k->my_wake = keys_name(prefix, key, keylen, my_wake, &k->my_wake_len);
}

void
lock_keys_free(struct lock_keys *k)
{
	char **all[] = { &k->lock, &k->meta, &k->metas, &k->fence, &k->sem,
	    &k->limit, &k->queue, &k->waiters, &k->wake,
	    &k->wake_prefix, &k->my_wake, &k->tokens, &k->last, &k->turn,
	    &k->broken, &k->shares, &k->writers, &k->wtokens, &k->timeouts };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(*all[i]);
	memset(k, 0, sizeof(*k));
}

void
lock_ctx_free(struct lock_ctx *ctx)
{
	lock_keys_free(&ctx->k);
	free(ctx->cmdline);
	free(ctx->waiter_info);
	ctx->cmdline = ctx->waiter_info = NULL;
}
