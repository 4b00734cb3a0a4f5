/* SPDX-License-Identifier: MIT */
/*
 * --redlock: one lock over N independent masters (N odd, 3 to
 * REDLOCK_MAX), each a one-server lock (single.h) of its own. Granted,
 * extended, released and re-entered by majority; see quorum.c for the
 * rules.
 */
#ifndef RLOCK_QUORUM_H
#define RLOCK_QUORUM_H

#include <stdint.h>

#include "conn.h"
#include "lockops.h"

/* A closed quorum over the n masters of cfgs (which outlive it); each
 * master's timeouts are capped at master_ms. */
struct lock *quorum_new(const struct conn_cfg *cfgs, int n,
    int64_t connect_ms, int64_t master_ms);

#endif
