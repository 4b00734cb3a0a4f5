/* SPDX-License-Identifier: MIT */
/*
 * The lock on one server (plain, or routed by Sentinel or Cluster): the
 * acquire / extend / release scripts with their replies checked, and how
 * its waiters are woken. Never sleeps and never prints.
 */
#ifndef RLOCK_SINGLE_H
#define RLOCK_SINGLE_H

#include <stdint.h>

#include "conn.h"
#include "lockops.h"

/* A closed lock on the server cfg names (cfg outlives it). */
struct lock *single_new(const struct conn_cfg *cfg, int64_t connect_ms,
    int64_t cmd_ms);

/*
 * The checks of acquire.lua's reply r, apart from the connection so they
 * can be tested and fuzzed alone: LOCK_GRANTED sets *fence, LOCK_BUSY
 * fills *busy, LOCK_ERROR means r is not a reply acquire.lua gives (the
 * caller reports it). r stays the caller's.
 */
enum lock_result single_parse_acquire(const struct reply *r, int64_t *fence,
    struct lock_busy *busy);

#endif
