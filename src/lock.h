/* SPDX-License-Identifier: MIT */
/*
 * The lock, as the rest of rlock uses it: open, acquire, extend, release,
 * is-ours, close, and how a waiter is woken. Two implementations behind
 * it: one server (single.c, which Sentinel or Cluster may route) and a
 * Redlock quorum of them (quorum.c). Nothing above this layer knows how
 * many servers there are, or sees a connection. Never sleeps, never
 * prints: a failure is left for lock_failure and the caller's message.
 */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "keys.h"
#include "lockops.h"
#include "server.h"
#include "wake.h"

/* What to open: one server, or the --redlock masters. */
struct lock_cfg {
	struct conn_cfg *servers;	/* owned (lock_cfg_free) */
	int n;
	int redlock;
	int64_t connect_timeout_ms;	/* the user's --connect-timeout */
	int64_t master_timeout_ms;	/* --redlock: each master's cap */
};

/* Free what a lock_cfg holds (its endpoints, the array). */
void lock_cfg_free(struct lock_cfg *cfg);

/* A closed lock for cfg (which outlives it); never NULL. */
struct lock *lock_new(const struct lock_cfg *cfg);
void lock_free(struct lock *l);

/* Another closed lock on the same servers (its own connections). */
struct lock *lock_new_like(const struct lock *l);

/*
 * Connect what is not connected (--redlock: every master; a majority
 * will do) within --connect-timeout. 0, or an exit status (69, 76, 77)
 * with the failure recorded.
 */
int lock_open(struct lock *l);

/*
 * lock_open for a run's first question: on a plain server (one, or each
 * --redlock master) the login (AUTH or PING) is not waited for but rides
 * ahead of the first command (CONN_LOGIN_AHEAD), which takes its answer
 * first, and whose failure is then the login's (failure.again: do not
 * try again; quorum.c asks such a master no further acquire). A round
 * trip less.
 */
int lock_open_first(struct lock *l);
void lock_close(struct lock *l);
int lock_is_open(const struct lock *l);

/* Start afresh after an error: one server is closed and opened again
 * (a failover may have moved it); a quorum keeps the masters that still
 * answer and reconnects the others. As lock_open. */
int lock_reopen(struct lock *l);

/* Timeouts for what follows (each --redlock master keeps its cap). */
void lock_set_timeouts(struct lock *l, int64_t connect_ms, int64_t cmd_ms);

/* The user's --connect-timeout: the budget of a last try (release). */
int64_t lock_connect_timeout(const struct lock *l);

/*
 * One acquire attempt; with `queue` a --fair waiter joins (or stays in)
 * the queue, with `want_holder` the busy reply names the holder.
 * LOCK_GRANTED sets *fence; LOCK_BUSY fills *busy; LOCK_ERROR leaves the
 * failure (FAIL_SCRIPT: a refusal by our own script, e.g. a --limit that
 * differs from the holders').
 */
enum lock_result lock_acquire(struct lock *l, const struct lock_ctx *ctx,
    int queue, int want_holder, int64_t *fence, struct lock_busy *busy);

/* 1 extended, 0 not ours any more, -1 error (failure recorded). */
/*
 * lock_acquire in two halves (never queued), for one plain server's
 * waiter that sends its attempt right behind its BLPOP (wake.h: a
 * waker's follow): lock_acquire_send writes it (0, or -1 with the failure
 * recorded; always -1 for --redlock), lock_acquire_recv reads its answer
 * within the command timeout, given the same ctx and want_holder.
 */
int lock_acquire_send(struct lock *l, const struct lock_ctx *ctx,
    int want_holder);
enum lock_result lock_acquire_recv(struct lock *l, const struct lock_ctx *ctx,
    int want_holder, int64_t *fence, struct lock_busy *busy);

int lock_extend(struct lock *l, const struct lock_ctx *ctx);

/* 1 released (or kept until --min-hold's end, with ctx->end), 0 was not
 * ours, -1 error (failure recorded). With ctx->end, the run is recorded
 * too, in the same call. */
int lock_release(struct lock *l, const struct lock_ctx *ctx);

/*
 * Record in P{KEY}:last what no release can: the run that lost its lease
 * (end, fence) or, with end NULL, a run skipped against the latest grant.
 * --redlock: on every master that answers. 0, or -1 (failure recorded).
 */
int lock_record(struct lock *l, const struct lock_ctx *ctx,
    const struct run_end *end, int64_t fence);

/*
 * Is KEY held by ctx's token right now (a nested run may re-enter)?
 * 1 yes, 0 no, -1 error. Reads only: a free KEY stays free.
 */
int lock_is_ours(struct lock *l, const struct lock_ctx *ctx);

/* A --fair waiter's heartbeat, and its leaving the queue: 0, or -1. */
int lock_heartbeat(struct lock *l, const struct lock_ctx *ctx);
int lock_dequeue(struct lock *l, const struct lock_ctx *ctx);

/*
 * Describe the current holder from P{KEY}:meta as "user@host (pid N:
 * cmd)" into buf; "another client" when rlock did not write it.
 */
void lock_describe_holder(struct lock *l, const struct lock_ctx *ctx,
    char *buf, size_t len);

/* How a waiter for ctx is woken (wake.h); free with waker_free. */
struct waker *lock_waker(struct lock *l, const struct lock_ctx *ctx);

/* Sentinel: the master moved (reconnect there)? 1 or 0; see
 * server_recheck. */
int lock_recheck(struct lock *l);

/* The idle connection to watch while holding (-1: none to watch). */
int lock_watch_fd(const struct lock *l);

/* The servers behind the lock (1, or each --redlock master), for the
 * operator's views (status, list) and the eviction guard. */
int lock_servers(const struct lock *l);
struct server *lock_server(struct lock *l, int i);

/* How many servers make a decision (1, or more than half). */
int lock_majority(const struct lock *l);

const struct failure *lock_failure(const struct lock *l);

#endif
