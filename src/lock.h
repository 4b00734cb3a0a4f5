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
/* A --fair waiter is alive while its :w key is, and while it is
 * subscribed (queue.lua): the key is refreshed every WAITER_BEAT_MS and
 * lapses WAITER_TTL_MS after the waiter's death; the subscription goes
 * with the process, so a dead waiter's key only matters if its
 * connection hangs open. */
#define WAITER_TTL_MS 6000
#define WAITER_BEAT_MS 2000
/* The one next in line looks this often whether a head that has yet to
 * take a free KEY died (acquire.lua): it costs one attempt per look. */
#define HANDOFF_LOOK_MS 200
/* A wake token nobody took is stale after this; see release.lua. */
#define WAKE_TOKEN_TTL_MS 5000

struct lock_keys {
	char *lock, *meta, *fence, *sem, *limit, *queue, *waiter, *tokens;
	char *waiter_prefix, *wake, *wake_prefix, *my_wake;
	size_t lock_len, meta_len, fence_len, sem_len, limit_len, queue_len;
	size_t waiter_len, waiter_prefix_len, wake_len, wake_prefix_len;
	size_t my_wake_len, tokens_len;
};

struct lock_ctx {
	struct lock_keys k;
	const char *key;	/* KEY as given, for messages; not owned */
	char token[37];
	int64_t lease_ms;
	long limit;		/* 1: mutex; N: semaphore */
	int fair;
	char host[256], user[64], pid[24];
	char *cmdline;		/* owned */
	char *waiter_info;	/* value of our :w key; owned */
};

/*
 * Build every key name of KEY under prefix, for a holder with token
 * (whose meta key differs in -N mode); free with lock_keys_free.
 */
void lock_keys_init(struct lock_keys *k, const char *prefix,
    const char *key, size_t keylen, const char *token, long limit);
void lock_keys_free(struct lock_keys *k);

/* Fill ctx: keys, a fresh random token (or `token` if not NULL), host,
 * user, pid, command line (taken over). Free with lock_ctx_free. */
void lock_ctx_init(struct lock_ctx *ctx, const char *prefix, const char *key,
    int64_t lease_ms, long limit, int fair, const char *token,
    char *cmdline);
void lock_ctx_free(struct lock_ctx *ctx);

enum lock_result { LOCK_ERROR = -1, LOCK_BUSY = 0, LOCK_GRANTED = 1 };

/* Why we did not get KEY, from the acquire script. */
struct lock_busy {
	int64_t wait_ms;	/* retry after this; -1: holder never expires */
	long long position;	/* in the --fair queue; -1 not queued */
	char user[64], host[256], pid[24], cmd[256];	/* "" if unknown */
	int64_t since_ms, now_ms;	/* server clock */
	int64_t lease_left_ms;	/* the holder's; -1 no expiry, -2 none */
	int foreign;		/* the holder is not rlock (no :meta) */
};

/*
 * One acquire attempt; with `queue` a --fair waiter joins (or stays in)
 * the queue, with `want_holder` the busy reply names the holder.
 * LOCK_GRANTED sets *fence; LOCK_BUSY fills *busy; LOCK_ERROR leaves the
 * status and message in cn.
 */
enum lock_result lock_acquire(struct conn *cn, const struct lock_ctx *ctx,
    int queue, int want_holder, int64_t *fence, struct lock_busy *busy);

/*
 * The checks of acquire.lua's reply r, apart from the connection so they
 * can be tested and fuzzed alone: LOCK_GRANTED sets *fence, LOCK_BUSY
 * fills *busy, LOCK_ERROR means r is not a reply acquire.lua gives (the
 * caller reports it). r stays the caller's.
 */
enum lock_result lock_parse_acquire(const redisReply *r, int64_t *fence,
    struct lock_busy *busy);

/*
 * The reply of extend, release and dequeue: 0 with r's value in *out, or
 * -1 if r is not an integer. r stays the caller's.
 */
int lock_parse_int(const redisReply *r, long long *out);

/*
 * Is KEY held by ctx's token right now (a nested run may re-enter)?
 * 1 yes, 0 no, -1 error (in cn). Reads only: a free KEY stays free.
 */
int lock_is_ours(struct conn *cn, const struct lock_ctx *ctx);

/*
 * Put the five keys every holder-side script starts with (lock, meta, sem,
 * limit, queue: the KEYS[1..5] of extend, release, force_release, inspect)
 * into argv/lens; returns how many (LOCK_HOLDER_KEYS).
 */
#define LOCK_HOLDER_KEYS 5
int lock_holder_keys(const struct lock_keys *k, const char **argv,
    size_t *lens);

/* A --fair waiter's heartbeat: 0, or -1 with the error in cn. */
int lock_heartbeat(struct conn *cn, const struct lock_ctx *ctx);

/* A --fair waiter leaves the queue: 0, or -1 with the error in cn. */
int lock_dequeue(struct conn *cn, const struct lock_ctx *ctx);

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
