/* SPDX-License-Identifier: MIT */
/*
 * How a waiter is woken, as the waiting loop (wait.c) sees it: block until
 * a release may have let the lock go, the holder's lease ends, or a
 * signal. The lock makes the waker (lock_waker); how it listens, a BLPOP
 * or subscriptions, is behind this interface (wake.h). Never prints.
 */
#ifndef RLOCK_WAKER_H
#define RLOCK_WAKER_H

#include <stdint.h>

#include "reply.h"

enum woke {
	WOKE_MESSAGE,		/* a wake-up arrived */
	WOKE_NEXT,		/* only "next" (queue.lua): look soon */
	WOKE_TIMEOUT,		/* `until` came first */
	WOKE_LOST,		/* the connection(s) went: try, then listen */
	/* the signal fd is readable: look, call again */
	WOKE_SIGFD
};

struct waker;

/* Subscribe where not subscribed (no-op for BLPOP): how many listen. */
int waker_listen(struct waker *w);

/* Is the waker able to wake us (BLPOP: always; subscriptions: `need`)? */
int waker_listening(const struct waker *w);

/*
 * Block until a wake-up, `until` (mono ms) or sigfd readable. After
 * WOKE_SIGFD the caller reads the signal and either calls again (a BLPOP
 * stays in flight) or gives up with waker_cancel.
 */
enum woke waker_wait(struct waker *w, int64_t until, int sigfd);

/*
 * The same, when `until` is the moment the holder's key expires: a BLPOP
 * still unanswered then is abandoned (its connection closed: Redis would
 * answer it only at its next clock tick) and the wait ends WOKE_TIMEOUT.
 */
enum woke waker_wait_expiry(struct waker *w, int64_t until, int sigfd);

/* Abandon a BLPOP in flight (its connection is closed) and close the
 * subscriptions; the next waker_listen/waker_wait starts afresh. */
void waker_cancel(struct waker *w);

/* Why the last wait ended WOKE_LOST. */
const struct failure *waker_failure(const struct waker *w);

void waker_free(struct waker *w);

#endif
