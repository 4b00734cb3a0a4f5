// SPDX-License-Identifier: MIT
/*
 * fanout: one blocking job per item, all at once, one thread each. For
 * the --redlock masters' connects (DNS, TCP, TLS, AUTH or PING), which
 * one after another cost the sum of their round trips, not the slowest.
 */
#ifndef RLOCK_FANOUT_H
#define RLOCK_FANOUT_H

/*
 * Call job(arg, i) for every i in [0, n) at once, and return when all
 * have returned. The caller's thread runs one of them; each other runs
 * in a thread of its own with every signal blocked, so the signals stay
 * the main thread's (its signalfd). A thread that cannot be made leaves
 * its job to the caller's thread, after the others: slower, never lost.
 * Each job's waits end at a stop signal when the caller's do (sig.h).
 * Jobs must touch only what is theirs (item i) and what nobody writes.
 */
void fanout_run(int n, void (*job)(void *arg, int i), void *arg);

#endif
