/* SPDX-License-Identifier: MIT */
/*
 * What the lock answers and the timings its users and its implementations
 * share: lock.h (the interface) and lockops.h (the implementations' ops)
 * both need them, and neither may include the other.
 */
#ifndef RLOCK_LOCKRES_H
#define RLOCK_LOCKRES_H

#include <stdint.h>

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
 * gone (lock_look_foreign): its release wakes nobody. */
#define FOREIGN_LOOK_MS 1000
/* A wake token nobody took is stale after this; see release.lua. */
#define WAKE_TOKEN_TTL_MS 5000
/* P{KEY}:last, the last run's record, outlives the next run of a monthly
 * job (31 days) with room for a late or skipped one; see lib/record.lua. */
#define LAST_RUN_TTL_MS ((int64_t)40 * 24 * 3600 * 1000)

enum lock_result { LOCK_ERROR = -1, LOCK_BUSY = 0, LOCK_GRANTED = 1 };

/* An acquire's `queue` (lock.h): a --fair waiter joins the queue (or
 * stays in it); LOCK_REJOIN: the same, from a waiter whose subscription
 * was made anew, so that the scripts notice a server that changed under
 * the queue (a restart, a failover) while its waiters have yet to
 * subscribe there (lib/queue.lua). */
#define LOCK_JOIN	1
#define LOCK_REJOIN	2

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
	/* The attempt counted this run as skipped (ctx->skip_count); with
	 * user set or foreign, it names the one exclusive holder. */
	int skip_counted;
};

/* What a lock can do beyond what every lock does (lock_caps). */
#define LOCK_CAN_LOOK	0x1	/* look at a foreign holder (lock.h) */
#define LOCK_FAILOVER	0x2	/* Sentinel: lock_recheck while waiting */

#endif
