/* SPDX-License-Identifier: MIT */
/*
 * Getting the lock: at once (-n), within --timeout, or forever. Waiting
 * blocks on the KEY's wake channel (pub/sub) with a timeout of the holder's
 * lease left, so a release wakes us in one round trip and a crashed
 * holder's expiry by timeout: no fixed-interval polling.
 */
#ifndef RLOCK_WAIT_H
#define RLOCK_WAIT_H

#include <stdint.h>

#include "conn.h"
#include "lock.h"

enum wait_status {
	WAIT_GRANTED,		/* *res filled */
	WAIT_TIMEOUT,		/* -n, or --timeout ran out */
	WAIT_SIGNAL,		/* res->signo arrived first */
	WAIT_ERROR		/* status and message in cn */
};

struct wait_result {
	int64_t fence;
	int64_t granted_at;	/* mono ms when the granting attempt began */
	int signo;
};

/*
 * Acquire ctx's lock on cn, waiting at most wait_ms (-1: forever; 0: one
 * attempt). sigfd's signals interrupt the wait. On any outcome but
 * WAIT_GRANTED nothing of ours is left in Redis.
 */
enum wait_status wait_lock(struct conn *cn, const struct lock_ctx *ctx,
    int64_t wait_ms, int sigfd, struct wait_result *res);

/*
 * The checks of the waiting loop's replies, apart from the connection so
 * they can be tested and fuzzed alone; r stays the caller's.
 * wait_parse_subscribe: 1 if r confirms a SUBSCRIBE, else 0.
 * wait_parse_pop: BLPOP's reply: 1 a wake token, 0 timed out (nil), -1
 * anything else.
 */
int wait_parse_subscribe(const redisReply *r);
/* 1 if r is an (s)unsubscribe push: the subscription ended under us. */
int wait_parse_unsubscribed(const redisReply *r);
int wait_parse_pop(const redisReply *r);

#endif
