/* SPDX-License-Identifier: MIT */
/*
 * Guard-rails: server settings that would break the lock's guarantees
 * without any error. Warnings only; never fatal.
 */
#ifndef RLOCK_GUARD_H
#define RLOCK_GUARD_H

#include "lock.h"

/*
 * Warn (once, on stderr) if the server may evict our keys: any
 * maxmemory-policy but noeviction. A server that refuses CONFIG (ACL,
 * renamed command, managed Redis) is not asked again and not reported.
 * With --redlock, one line for the first master that may evict. Returns
 * 1 if it warned.
 */
int guard_eviction(struct lock *l);

#endif
