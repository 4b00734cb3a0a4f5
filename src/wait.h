/* SPDX-License-Identifier: MIT */
/*
 * Getting the lock: at once (-n), within --timeout, or forever. Waiting
 * blocks on the waker the lock makes (a BLPOP on P{KEY}:tok, or a --fair
 * waiter's own channel) with a timeout of the holder's lease left, so a
 * release wakes us in one round trip and a crashed holder's expiry by
 * timeout: no fixed-interval polling.
 */
#ifndef RLOCK_WAIT_H
#define RLOCK_WAIT_H

#include <stdint.h>

#include "lock.h"
#include "reply.h"

enum wait_status {
	WAIT_GRANTED,		/* *res filled */
	WAIT_TIMEOUT,		/* -n, or --timeout ran out */
	WAIT_SIGNAL,		/* res->signo arrived first */
	WAIT_ERROR		/* why in res->fail */
};

struct wait_result {
	int64_t fence;
	int64_t granted_at;	/* mono ms when the granting attempt began */
	/* When it was heard: later than granted_at by the BLPOP's wait for
	 * an attempt sent behind it (which Redis ran at its end), else the
	 * same. The lease counts from granted_at; --max-hold and the run's
	 * time, which must not count the wait, from heard_at. */
	int64_t heard_at;
	int signo;
	struct failure fail;	/* WAIT_ERROR: why */
	int answered;		/* an attempt was answered before fail */
	/* WAIT_TIMEOUT: the last busy answer (skip_counted under -n, its
	 * holder); else zeroed. */
	struct lock_busy busy;
};

/*
 * Work the caller would otherwise do after the grant, done in time
 * nobody waits for: idle (may be NULL) is called with arg, the lock and
 * its ctx once, when the wait first blocks.
 */
struct wait_hooks {
	void (*idle)(void *arg, struct lock *l, const struct lock_ctx *ctx);
	void *arg;
};

/*
 * Acquire ctx's lock on l, waiting at most wait_ms (-1: forever; 0: one
 * attempt) from `since` (mono ms: the run's start, so that its first
 * connect counts; a first connect that failed with weather, l closed, is
 * the wait's first attempt). sigfd's signals interrupt the wait. On any
 * outcome but WAIT_GRANTED nothing of ours is left in Redis.
 */
enum wait_status wait_lock(struct lock *l, const struct lock_ctx *ctx,
    int64_t wait_ms, int64_t since, int sigfd, struct wait_result *res,
    const struct wait_hooks *hooks);

/*
 * The longest one connect or command may take while waiting wait_ms
 * (> 0), connect_ms being --connect-timeout: the wait and the grace its
 * last attempt has to answer, never more than connect_ms. So a wait
 * shorter than a round trip still makes its one attempt and hears the
 * answer: a free lock is taken, as with -n, and a held one is not
 * obtained; wait_lock keeps it within the wait's bound.
 */
int64_t wait_try_ms(int64_t wait_ms, int64_t connect_ms);

/*
 * Is f, why a run's first connect failed, weather that wait_lock rides
 * out under a wait of wait_ms (its attempts connect again)? Only with -w,
 * and only once the server was reached: a connection refused, a name
 * that does not resolve or a failed TLS handshake most likely mean a
 * wrong URL.
 */
int wait_first_weather(int64_t wait_ms, const struct failure *f);

#endif
