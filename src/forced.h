/* SPDX-License-Identifier: MIT */
/*
 * Hearing of a `release --force` while holding: a thread of its own, on
 * connections of its own, blocks in BLPOP on P{KEY}:broken (force_release
 * pushes one element there for each holder it broke) and, when one comes,
 * asks Redis whether the lock is still ours. So the holder learns within
 * a round trip, not at its next extend. Never prints but with -v; never
 * decides what to do about it.
 */
#ifndef RLOCK_FORCED_H
#define RLOCK_FORCED_H

#include <pthread.h>
#include <stdatomic.h>

#include "lock.h"

/* Zeroed: not started. */
struct forced {
	pthread_t thread;
	int running;
	int stop_pipe[2];
	int event_pipe[2];	/* read end: forced_fd */
	_Atomic int heard;	/* Redis said the lock is not ours */
	struct lock *l;		/* the thread's own */
	const struct lock_ctx *ctx;
};

/*
 * Start listening for ctx's lock on servers like those of `like`
 * (connecting is the thread's). 0, or -1 (errno) when the thread could
 * not be made: the holder then learns at its next extend, as without.
 */
int forced_start(struct forced *f, const struct lock *like,
    const struct lock_ctx *ctx);

/* Readable (a byte to drain) once forced_heard is 1; -1 when stopped. */
int forced_fd(const struct forced *f);

/* 1 once Redis said the lock is no longer ours, else 0. */
int forced_heard(const struct forced *f);

/* Stop and join the thread and close its connections. Idempotent. */
void forced_stop(struct forced *f);

#endif
