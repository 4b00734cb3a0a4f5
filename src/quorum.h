/* SPDX-License-Identifier: MIT */
/*
 * --redlock: one lock over N independent masters (N odd). A struct conn
 * whose cfg has peers is a quorum: conn.c hands its opening and closing
 * here, and lock.c its acquire, extend, release and re-entry check. The
 * rest of rlock does not know how many servers there are.
 */
#ifndef RLOCK_QUORUM_H
#define RLOCK_QUORUM_H

#include <stdint.h>

#include "conn.h"
#include "lock.h"

/* How many masters make a decision: more than half. */
int quorum_majority(const struct conn *cn);

/* Connect every master that is not connected; 0 when a majority is. */
int quorum_reopen(struct conn *cn);
void quorum_close(struct conn *cn);
int quorum_is_open(const struct conn *cn);
void quorum_set_timeouts(struct conn *cn, int64_t connect_ms, int64_t cmd_ms);

/*
 * Acquire on every master with one token; granted when a majority said
 * yes and, fences raised, within the validity time (lease - elapsed -
 * drift). Anything less is undone on every master. A split vote is
 * LOCK_BUSY with a short random wait.
 */
enum lock_result quorum_acquire(struct conn *cn, const struct lock_ctx *ctx,
    int want_holder, int64_t *fence, struct lock_busy *busy);

/* 1 extended on a majority, 0 lost (too many masters say not ours), -1
 * undecided (errors): try again before the deadline. */
int quorum_extend(struct conn *cn, const struct lock_ctx *ctx);

/* Released on every master that answers: 1, 0 not ours on a majority,
 * -1 not known (errors). */
int quorum_release(struct conn *cn, const struct lock_ctx *ctx);

/* Held by ctx's token on a majority: 1, 0, or -1 on errors. */
int quorum_is_ours(struct conn *cn, const struct lock_ctx *ctx);

#endif
