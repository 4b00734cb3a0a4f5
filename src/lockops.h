/* SPDX-License-Identifier: MIT */
/*
 * What a lock implementation provides (one server: single.c; a Redlock
 * quorum of them: quorum.c) and the results and timings they share. The
 * ops table and struct lock are for lock.c and the implementations;
 * everyone else goes through lock.h.
 */
#ifndef RLOCK_LOCKOPS_H
#define RLOCK_LOCKOPS_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "mode.h"
#include "reply.h"

/* --redlock takes 3 to this many masters (an odd number). */
#define REDLOCK_MAX 9

/* Fencing counters outlive any lease by far; see acquire.lua. */
#define FENCE_TTL_MS ((int64_t)7 * 24 * 3600 * 1000)
/* A --fair waiter is alive while it is subscribed (queue.lua): the kernel
 * closes a dead process's sockets at once. Its :w key only bounds a
 * connection that hangs open (a host gone from the network): refreshed
 * every WAITER_BEAT_MS, it lapses WAITER_TTL_MS after the last refresh.
 * Rare refreshes keep a blocked waiter's cost to Redis near nothing. */
#define WAITER_TTL_MS 90000
#define WAITER_BEAT_MS 30000
/* A live head that has yet to take a free KEY this long after its turn
 * came (frozen, or its connection hanging open) is passed over
 * (acquire.lua); a woken head takes its turn in one round trip. */
#define TURN_MS 6000
/* The one next in line looks this often whether a head that has yet to
 * take a free KEY died (acquire.lua): it costs one attempt per look. */
#define HANDOFF_LOOK_MS 200
/* A waiting exclusive request that readers wait for (P{K}:xw) says so
 * for this long, again at every attempt; its attempts come at least every
 * third of it, so one late attempt costs nothing, and a writer that died
 * while waiting stops readers for this long at most. */
#define WRITER_TTL_MS 4000
/* How often a waiter on a holder that is not rlock looks whether it is
 * gone (foreign.h): its release wakes nobody. */
#define FOREIGN_LOOK_MS 1000
/* A wake token nobody took is stale after this; see release.lua. */
#define WAKE_TOKEN_TTL_MS 5000
/* P{KEY}:last, the last run's record, outlives the next run of a monthly
 * job (31 days) with room for a late or skipped one; see lib/record.lua. */
#define LAST_RUN_TTL_MS ((int64_t)40 * 24 * 3600 * 1000)

enum lock_result { LOCK_ERROR = -1, LOCK_BUSY = 0, LOCK_GRANTED = 1 };

/* Why we did not get KEY, from the acquire script. */
struct lock_busy {
	int64_t wait_ms;	/* retry after this; -1: holder never expires */
	long long position;	/* in the --fair queue; -1 not queued */
	char user[64], host[256], pid[24], cmd[256];	/* "" if unknown */
	int64_t since_ms, now_ms;	/* server clock */
	int64_t lease_left_ms;	/* the holder's; -1 no expiry, -2 none */
	int foreign;		/* the holder is not rlock (no :meta) */
	/* An exclusive waiter that new readers now wait for (P{K}:xw);
	 * lock_dequeue takes that back when it gives up. */
	int writer;
	int64_t ended_ms;	/* its run ended (server clock); 0 runs */
};

/* What a lock can do beyond what every lock does (lock_caps). */
#define LOCK_CAN_LOOK	0x1	/* look at a foreign holder (lock.h) */
#define LOCK_FAILOVER	0x2	/* Sentinel: lock_recheck while waiting */

struct lock;
struct lock_cfg;
struct lock_node;
struct waker;

/* Every operation leaves its failure where `failure` finds it; see
 * lock.h for what each one means. */
struct lock_ops {
	int (*open)(struct lock *l);
	void (*close)(struct lock *l);
	int (*is_open)(const struct lock *l);
	void (*set_timeouts)(struct lock *l, int64_t connect_ms,
	    int64_t cmd_ms);
	enum lock_result (*acquire)(struct lock *l, const struct lock_ctx *ctx,
	    int queue, int want_holder, int64_t *fence,
	    struct lock_busy *busy);
	int (*acquire_start)(struct lock *l, const struct lock_ctx *ctx,
	    int queue, int want_holder);
	enum lock_result (*acquire_finish)(struct lock *l,
	    const struct lock_ctx *ctx, int64_t *fence,
	    struct lock_busy *busy);
	int (*acquire_pending)(struct lock *l, int64_t *sent_at);
	int (*extend)(struct lock *l, const struct lock_ctx *ctx);
	int (*release)(struct lock *l, const struct lock_ctx *ctx);
	int (*record)(struct lock *l, const struct lock_ctx *ctx,
	    const struct run_end *end, int64_t fence);
	int (*is_ours)(struct lock *l, const struct lock_ctx *ctx);
	int (*heartbeat)(struct lock *l, const struct lock_ctx *ctx);
	int (*dequeue)(struct lock *l, const struct lock_ctx *ctx);
	void (*describe_holder)(struct lock *l, const struct lock_ctx *ctx,
	    char *buf, size_t len);
	struct waker *(*waker)(struct lock *l, const struct lock_ctx *ctx,
	    int want_holder);
	int (*caps)(const struct lock *l);
	int (*look_foreign)(struct lock *l, const struct lock_ctx *ctx);
	void (*timeouts)(const struct lock *l, int64_t *connect_ms,
	    int64_t *cmd_ms);
	int (*recheck)(struct lock *l);
	int (*watch_fd)(const struct lock *l);
	int (*nodes)(const struct lock *l);
	struct lock_node *(*node)(struct lock *l, int i);
	const struct failure *(*failure)(const struct lock *l);
	void (*free)(struct lock *l);
};

/* The part every implementation starts with. */
struct lock {
	const struct lock_ops *ops;
	const struct lock_cfg *cfg;	/* what lock_new was given */
	int64_t connect_ms;		/* the budget of a reconnect */
	int64_t user_connect_ms;	/* --connect-timeout, for the release */
};

#endif
