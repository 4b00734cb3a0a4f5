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
 * maxmemory-policy but noeviction. The question is sent now and answered
 * with the next command on each connection (see guard.c), so the line
 * comes during the acquire. A server that refuses CONFIG (ACL, renamed
 * command, managed Redis) is reported only with -v. With --redlock, one
 * line for the first master that may evict.
 */
void guard_eviction(struct lock *l);

#endif
