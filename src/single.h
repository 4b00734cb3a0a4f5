/* SPDX-License-Identifier: MIT */
/*
 * The lock on one server (plain, or routed by Sentinel or Cluster): the
 * acquire / extend / release scripts with their replies checked, and how
 * its waiters are woken. Blocks only within its timeouts; a failure is
 * left in its server (it prints only the warning of a release whose
 * later steps Redis refused).
 */
#ifndef RLOCK_SINGLE_H
#define RLOCK_SINGLE_H

#include <stdint.h>

#include "conn.h"
#include "lockops.h"
#include "server.h"

/* One server of a lock: the handle lock.h gives out (lock_node). */
struct lock_node {
	struct server *srv;
};

/* A closed lock on the server cfg names (cfg outlives it). */
struct lock *single_new(const struct conn_cfg *cfg, int64_t connect_ms,
    int64_t cmd_ms);

/*
 * The two halves of a mode's call (mode.h) on one server, so that a
 * quorum asks its masters at once: single_send writes c (0, or -1 with m
 * closed and the failure recorded); single_recv_acquire reads an
 * acquire's reply by `deadline` (mono ms) and answers as lock_acquire,
 * single_recv any other's as lock_extend, lock_release and lock_is_ours
 * do (1, 0, -1), given the same c. One send, then one receive, per call.
 */
int single_send(struct lock *m, const struct mode_call *c);
enum lock_result single_recv_acquire(struct lock *m,
    const struct mode_call *c, int64_t deadline, int64_t *fence,
    struct lock_busy *busy);
int single_recv(struct lock *m, const struct mode_call *c, int64_t deadline);

/*
 * The checks of acquire.lua's reply r, apart from the connection so they
 * can be tested and fuzzed alone: LOCK_GRANTED sets *fence, LOCK_BUSY
 * fills *busy, LOCK_ERROR means r is not a reply acquire.lua gives (the
 * caller reports it). r stays the caller's.
 */
enum lock_result single_parse_acquire(const struct reply *r, int64_t *fence,
    struct lock_busy *busy);

#endif
