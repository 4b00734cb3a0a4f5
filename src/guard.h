/* SPDX-License-Identifier: MIT */
/*
 * Guard-rails: server settings that would break the lock's guarantees
 * without any error. Warnings only; never fatal.
 */
#ifndef RLOCK_GUARD_H
#define RLOCK_GUARD_H

#include "lock.h"

/* What the eviction check has said so far, for one lock. */
struct guard {
	int warned;		/* a server may evict: said once */
	int refused;		/* a server closed on the question */
};

/*
 * Warn (once, on stderr) if the server may evict our keys: any
 * maxmemory-policy but noeviction. The question is sent now and answered
 * with the next command on each connection (see guard.c), so the line
 * comes during the acquire; g, zeroed by the caller, must outlive l's
 * connections. A server that refuses CONFIG (ACL, renamed command,
 * managed Redis) is reported only with -v. With --redlock, one line for
 * the first master that may evict.
 */
void guard_eviction(struct guard *g, struct lock *l);

/*
 * Did f, the failure of the first command the question rode ahead of,
 * come from the server or a proxy in front of it closing the connection
 * on CONFIG (twemproxy does)? Then 1, once, and -v says the check is not
 * made: the caller opens again and goes on without it, since the lock is
 * what matters. Else 0.
 */
int guard_refused(struct guard *g, const struct failure *f);

#endif
