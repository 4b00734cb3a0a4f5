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
#include "wait.h"

/* Run o's COMMAND under ctx's lock (granted as in res); returns the exit
 * status. The lock is released before it returns. */
int sup_run(const struct rlock_opts *o, struct lock_ctx *ctx,
    struct lock *l, int sigfd, const struct wait_result *res);

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
