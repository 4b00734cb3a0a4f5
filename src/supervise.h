/* SPDX-License-Identifier: MIT */
/*
 * Running COMMAND while the lock is held: fork and exec, forward signals,
 * keep the lease renewed, act on its loss (--on-lost), release, and turn
 * the outcome into rlock's exit status. Once the lock is held, this is the
 * only module that decides how rlock ends.
 */
#ifndef RLOCK_SUPERVISE_H
#define RLOCK_SUPERVISE_H

#include "cli.h"
#include "lock.h"
#include "renew.h"
#include "wait.h"

/*
 * A script section's owner (section.c) in COMMAND's place: sup_run starts
 * no COMMAND but calls started() where it would, signals the owner's tree
 * where COMMAND's would be, and ends the run once ended() says so, asked
 * whenever one of fds (-1: none) is readable and at least every second.
 */
struct sup_owner {
	pid_t pid;
	int fds[2];
	void (*started)(struct sup_owner *w);
	int (*ended)(struct sup_owner *w);
};

/*
 * What sup_run would otherwise set up after the grant, done while the
 * wait blocks: the renewal thread, made and parked (renew_park), the
 * exec pipe and the out-of-memory reserve; no process (the watcher is
 * forked after the grant: a run that does not get the lock forks
 * nothing). Zeroed by the caller; sup_run takes it over, sup_ahead_drop
 * ends what is left when the wait ends without the lock. Failing to make
 * any of it costs nothing but the time saved: sup_run makes it as
 * without a wait.
 */
struct sup_ahead {
	struct renewer rw;
	int piped;			/* exec_pipe is made, not taken */
	int exec_pipe[2];
	struct sup_owner *owner;	/* set by the caller: a section's */
};
void sup_ahead(struct sup_ahead *a, struct lock *l,
    const struct lock_ctx *ctx);
void sup_ahead_drop(struct sup_ahead *a);

/*
 * COMMAND must never start after a stop signal (sig.h): if one is pending
 * on sigfd, give the grant back (a release with no run to record, bounded
 * as an undo is) and return 128+N; else 0.
 */
int sup_stopped(struct lock *l, const struct lock_ctx *ctx, int sigfd);

/* Run o's COMMAND under ctx's lock (granted as in res), with what a
 * prepared (its renewer is made here if sup_ahead made none); returns
 * the exit status. The lock is released before it returns. */
int sup_run(const struct rlock_opts *o, struct lock_ctx *ctx,
    struct lock *l, int sigfd, const struct wait_result *res,
    struct sup_ahead *a);

/*
 * --max-hold: how long after the grant the lock may last at most (0:
 * unbounded), for a lease of lease_ms: the SIGKILL --kill-after after
 * --max-hold, plus a margin for a supervisor that wakes late (twice the
 * drift allowance and a renewal retry: a tenth of the lease, 50 ms to
 * 1 s). The renewals stop there, and no longer lease is asked for.
 */
int64_t sup_hold_bound(const struct rlock_opts *o, int64_t lease_ms);

/* Exec o's COMMAND in this process (nested, re-entrant run): returns
 * only on failure, with 126 or 127 after the message. */
int sup_exec_here(const struct rlock_opts *o);

#endif
