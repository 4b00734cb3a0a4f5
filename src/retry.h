/* SPDX-License-Identifier: MIT */
/*
 * What a waiter rides out (the contract's Weather): which failures are
 * the passing conditions of a production Redis (a restart, max clients,
 * LOADING, BUSY, a failover) rather than a mistake no retry can change,
 * and how long to back off before the next try. Pure: no I/O, no clock.
 */
#ifndef RLOCK_RETRY_H
#define RLOCK_RETRY_H

#include <stdint.h>

#include "reply.h"

/* The longest pause between two tries. */
#define RETRY_BACKOFF_MAX_MS 1000

/*
 * Is f worth another try, on a new connection, by a run that waits? 1 for
 * an unreachable Redis (69's class: refused, reset, silent, max clients,
 * LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, a MOVED to a node
 * that does not answer); 0 for what only the user can change (76, 77),
 * and for a login that went unanswered with an undo behind it: that undo
 * may still reach Redis, after a new try with the same token was granted.
 */
int retry_worth(const struct failure *f);

/* The pause before try n+1 of a run of failed ones (n from 0): doubling
 * from 100 ms up to RETRY_BACKOFF_MAX_MS. */
int64_t retry_backoff_ms(int n);

#endif
