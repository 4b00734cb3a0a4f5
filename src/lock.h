/* SPDX-License-Identifier: MIT */
/*
 * The lock protocol on one Redis: key names under --prefix, and the
 * acquire / extend / release scripts with their replies checked. Never
 * sleeps and never prints; waiting is wait.c's job.
 */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* Fencing counters outlive any lease by far; see acquire.lua. */
#define FENCE_TTL_MS ((int64_t)7 * 24 * 3600 * 1000)

struct lock_keys {
	char *lock, *meta, *fence, *sem, *wake;
	size_t lock_len, meta_len, fence_len, sem_len, wake_len;
};

struct lock_ctx {
	struct lock_keys k;
	char token[37];
	int64_t lease_ms;
	char host[256], user[64], pid[24];
	char *cmdline;		/* owned */
};

/* Build the key names "P{KEY}", "P{KEY}:meta", ... ; lock_keys_free. */
void lock_keys_init(struct lock_keys *k, const char *prefix,
    const char *key, size_t keylen);
void lock_keys_free(struct lock_keys *k);

/* Fill ctx: keys, a fresh random token (or `token` if not NULL), host,
 * user, pid, command line (taken over). Free with lock_ctx_free. */
void lock_ctx_init(struct lock_ctx *ctx, const char *prefix, const char *key,
    int64_t lease_ms, const char *token, char *cmdline);
void lock_ctx_free(struct lock_ctx *ctx);

enum lock_result { LOCK_ERROR = -1, LOCK_BUSY = 0, LOCK_GRANTED = 1 };

/*
 * One acquire attempt. LOCK_GRANTED sets *fence; LOCK_BUSY sets *pttl
 * (-1: no expiry); LOCK_ERROR leaves the status and message in cn.
 */
enum lock_result lock_acquire(struct conn *cn, const struct lock_ctx *ctx,
    int64_t *fence, int64_t *pttl);

/* 1 extended, 0 not ours any more, -1 error (in cn). */
int lock_extend(struct conn *cn, const struct lock_ctx *ctx);

/* 1 released, 0 was not ours, -1 error (in cn). */
int lock_release(struct conn *cn, const struct lock_ctx *ctx);



/*
 * Describe the current holder from P{KEY}:meta as "user@host (pid N:
 * cmd)" into buf; "another client" when rlock did not write it.
 */
void lock_describe_holder(struct conn *cn, const struct lock_keys *k,
    char *buf, size_t len);
#endif
