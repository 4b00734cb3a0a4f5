/* SPDX-License-Identifier: MIT */
/*
 * What a lock is called in Redis and who is asking: every key and channel
 * name of KEY under --prefix (the layout is at the top of single.c), and
 * the holder's identity (token, user, host, pid, command line) that the
 * scripts record. No I/O but the host and user lookups.
 */
#ifndef RLOCK_KEYS_H
#define RLOCK_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Each field is named as the scripts' KEYS headers name the key: a
 * generated SCRIPT_KEYS(a, k) binds a call's keys by those names. */
struct lock_keys {
	char *lock, *meta, *metas, *fence, *sem, *limit, *queue, *waiters;
	char *tokens, *wake, *wake_prefix, *my_wake;
	char *last;		/* the last run's record */
	char *turn;		/* the --fair queue head's turn */
	char *broken;		/* release --force tells holders here */
	/* -s: the shares, the exclusive waiters they wait for, and the
	 * wake tokens of those */
	char *shares, *writers, *wtokens;
	/* --redisson --fair: Redisson's sorted set of the waiters' timeouts
	 * (mode_redisson.c); NULL in rlock's own names */
	char *timeouts;
	size_t lock_len, meta_len, metas_len, fence_len, sem_len, limit_len;
	size_t queue_len, waiters_len, wake_len, wake_prefix_len;
	size_t my_wake_len, tokens_len, last_len, turn_len, broken_len;
	size_t shares_len, writers_len, wtokens_len, timeouts_len;
};

/* How a run ended, for the release that records it in P{KEY}:last. */
struct run_end {
	int exit_status;	/* rlock's own exit status for the run */
	int lease_lost;
	int64_t min_hold_ms;	/* --min-hold: keep KEY until grant + this */
	int64_t ran_ms;		/* grant to end on our clock (meta gone) */
};

struct lock_mode;	/* mode.h */

struct lock_ctx {
	const struct lock_mode *mode;	/* what the lock is in Redis */
	struct lock_keys k;
	const char *key;	/* KEY as given, for messages; not owned */
	const char *prefix;	/* --prefix; not owned */
	char token[37];
	int64_t lease_ms;
	long limit;		/* 1: mutex; N: semaphore */
	int shared;		/* -s: a share of KEY (limit is 1) */
	int fair;
	char host[256], user[64], pid[24];
	char *cmdline;		/* owned */
	char *waiter_info;	/* "user\x1fhost\x1fpid\x1fcmd"; owned */
	/* What else this caller runs while it waits, for acquire.lua's ACL
	 * check: "w" BLPOP, "f" --fair, "s" --redlock's SSUBSCRIBE; NULL
	 * none. Not owned. */
	const char *acl_needs;
	/* Set only for the release that ends a run (supervise.c): that
	 * release records it and applies --min-hold. Releases that undo a
	 * grant nobody used leave it NULL. */
	const struct run_end *end;
	/* The fence acquire.lua is asked to draw (its fence_proposed), or
	 * 0: none. */
	int64_t fence_proposed;
	/* A run that will not wait (-n): on one server, an acquire that
	 * finds KEY held counts the run as skipped in P{KEY}:last in the
	 * same call (lock_busy's skip_counted) and names the holder. */
	int skip_count;
};

/*
 * Build every key and channel name of KEY under prefix as rlock's own
 * lock names them (mode_rlock.c), for a waiter with token (its wake
 * channel; NULL: none); free with lock_keys_free.
 */
void lock_keys_init(struct lock_keys *k, const char *prefix,
    const char *key, size_t keylen, const char *token);
void lock_keys_free(struct lock_keys *k);

/* Free what lock_ctx_init (mode.h) filled ctx with. */
void lock_ctx_free(struct lock_ctx *ctx);

/*
 * Every name of KEY starts P{KEY}: the Cluster hash tag {KEY} puts them
 * all in one slot. But Redis reads the tag from the first '{' to the first
 * '}' after it, and an empty tag is no tag: a KEY that starts with '}'
 * would make "P{}...", each name hashed whole, its scripts refused with
 * CROSSSLOT. Such a KEY is marked with a '\' after the '{' (P{\}x}, tag
 * "\"); so is a KEY that starts with '\' itself (P{\\y}), so that no two
 * KEYs share a name. Every other KEY is P{KEY} as it stands.
 *
 * keys_name: P{KEY}suffix, marked where KEY needs it; *len its length.
 * Caller frees.
 */
char *keys_name(const char *prefix, const char *key, size_t keylen,
    const char *suffix, size_t *len);

/*
 * If name (len bytes) is one keys_name gives for some KEY and suffix,
 * return that KEY (a pointer into name) and its length in *keylen; else
 * NULL (another client's name, or P{}x} as rlock never writes it).
 */
const char *keys_parse(const char *prefix, const char *name, size_t len,
    const char *suffix, size_t *keylen);

/* 1 if a prefix would make every name's hash tag empty ("{}" first). */
int keys_bad_prefix(const char *prefix);

#endif
