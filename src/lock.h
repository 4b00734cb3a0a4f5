/* SPDX-License-Identifier: MIT */
/*
 * The lock, as the rest of rlock uses it: open, acquire, extend, release,
 * is-ours, close, and how a waiter is woken. Two implementations behind
 * it: one server (single.c, which Sentinel or Cluster may route) and a
 * Redlock quorum of them (quorum.c). Nothing above this layer knows how
 * many servers there are, or sees a connection: what it may ask of one
 * server (the operator's views, the eviction check) goes through a
 * lock_node. Blocks only within the timeouts it is given; a failure is
 * left for lock_failure and the caller's one message (it prints only -v
 * lines, and a warning where Redis refused a step after a release).
 */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "lockres.h"
#include "mode.h"
#include "reply.h"
#include "waker.h"

struct conn_cfg;	/* one server's address and login (conn.h) */
struct script_args;	/* a script call (script_args.h) */

/* What to open: one server, or the --redlock masters. */
struct lock_cfg {
	struct conn_cfg *servers;	/* owned (lock_cfg_free) */
	int n;
	int redlock;
	int64_t connect_timeout_ms;	/* the user's --connect-timeout */
	int64_t master_timeout_ms;	/* --redlock: each master's cap */
	const char *url_from;		/* for messages: rlock_opts' */
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
 * One acquire attempt; with `queue` (LOCK_JOIN, LOCK_REJOIN) a --fair
 * waiter joins (or stays in) the queue, with `want_holder` the busy reply
 * names the holder.
 * LOCK_GRANTED sets *fence; LOCK_BUSY fills *busy; LOCK_ERROR leaves the
 * failure (FAIL_SCRIPT: a refusal by our own script, e.g. a --limit that
 * differs from the holders').
 */
enum lock_result lock_acquire(struct lock *l, const struct lock_ctx *ctx,
    int queue, int want_holder, int64_t *fence, struct lock_busy *busy);

/*
 * lock_acquire is the lock's start of an attempt (the ops' acquire_start)
 * and then this: its answer read within the command timeout, given the
 * same ctx, answered as lock_acquire. A lock also starts one on its own,
 * right behind a wake-up (lock_waker), for the waiter to finish here.
 */
enum lock_result lock_acquire_finish(struct lock *l,
    const struct lock_ctx *ctx, int64_t *fence, struct lock_busy *busy);

/*
 * Is an attempt started and not finished? 1 yes: lock_acquire_finish
 * reads its answer, and *sent_at (if not NULL) says when it was sent (a
 * grant counts from then). -1 one was, but its connection closed before
 * its answer was read: it may have been granted unseen (only a release
 * with the token makes sure); told once. 0 no.
 */
int lock_acquire_pending(struct lock *l, int64_t *sent_at);

/* 1 extended, 0 not ours any more, -1 error (failure recorded). */
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

/*
 * How a waiter for ctx is woken (waker.h); free with waker_free. A plain
 * waiter on one plain server has the lock send its attempt right behind
 * each BLPOP that waits for the retry time (asking for the holder with
 * want_holder): Redis runs it the moment a release's token reaches the
 * waiter, and the hand-off costs one round trip, not two. The waiter
 * finishes it (lock_acquire_pending) before it waits again.
 */
struct waker *lock_waker(struct lock *l, const struct lock_ctx *ctx,
    int want_holder);

/*
 * How a holder of ctx hears a release --force (renew.h): a BLPOP on
 * P{KEY}:broken, on the one server or on the first --redlock master that
 * answers (force_release runs on each), its connections named
 * rlock-holder (CLIENT SETNAME, where the user may). Call with l open;
 * free with waker_free.
 */
struct waker *lock_listener(struct lock *l, const struct lock_ctx *ctx);

/* What l can do beyond the basics: LOCK_CAN_LOOK, LOCK_FAILOVER. */
int lock_caps(const struct lock *l);

/*
 * With LOCK_CAN_LOOK: is KEY still held by a client other than rlock
 * (P{KEY} without :meta)? 1 yes, 0 no (free, or rlock's now: an attempt
 * tells), -1 a failure (recorded), for which an attempt is as good a
 * next step.
 */
int lock_look_foreign(struct lock *l, const struct lock_ctx *ctx);

/* The timeouts in force (lock_set_timeouts), to put them back after a
 * try with its own. */
void lock_timeouts(const struct lock *l, int64_t *connect_ms,
    int64_t *cmd_ms);

/* With LOCK_FAILOVER (Sentinel): the master moved (reconnect there)? 1
 * or 0; see server_recheck. */
int lock_recheck(struct lock *l);

/* The idle connection to watch while holding (-1: none to watch). */
int lock_watch_fd(const struct lock *l);

/* How many servers make a decision (1, or more than half). */
int lock_majority(const struct lock *l);

/*
 * The servers behind the lock (1, or each --redlock master), for the
 * operator's views (status, list, release --force) and the eviction
 * guard: lock_nodes of them, lock_node(l, i) each, which l keeps.
 */
struct lock_node;
int lock_nodes(const struct lock *l);
struct lock_node *lock_node(struct lock *l, int i);

/* Connected? Why its last command failed, and the redacted URL that
 * names it in a message. */
int lock_node_is_open(const struct lock_node *n);
const struct failure *lock_node_failure(const struct lock_node *n);
void lock_node_name(const struct lock_node *n, char *buf, size_t len);

/* One command, or one script call (script_args.h; read-only: _ro), as
 * server_command and script_call: the reply (caller frees), or NULL with
 * the failure recorded in n. */
struct reply *lock_node_command(struct lock_node *n, int argc,
    const char **argv, const size_t *lens);
struct reply *lock_node_script(struct lock_node *n,
    const struct script_args *a);
struct reply *lock_node_script_ro(struct lock_node *n,
    const struct script_args *a);

/* Record a reply of the wrong shape for `what` on n; its status. */
int lock_node_fail_reply(struct lock_node *n, const char *what,
    const struct reply *r);

/*
 * fn(m, arg) on every master of n's Cluster, each a node of its own for
 * the call (list's SCAN), or on n itself for any other server. 0, or -1:
 * the first failure (fn's, or reaching a master) recorded in n.
 */
int lock_node_each_master(struct lock_node *n,
    int (*fn)(struct lock_node *m, void *arg), void *arg);

/*
 * A question that rides ahead of the next command on n's connection, if
 * open (pipelined: no round trip of its own); fn(arg, reply) takes its
 * answer when that command's reply is read. 0, or -1 (not sent).
 */
int lock_node_ask_ahead(struct lock_node *n, int argc, const char **argv,
    const size_t *lens, void (*fn)(void *arg, const struct reply *r),
    void *arg);

/* "hiredis X.Y.Z": the library the lock speaks Redis with (--version). */
const char *lock_protocol_library(void);

const struct failure *lock_failure(const struct lock *l);

#endif
