/* SPDX-License-Identifier: MIT */
/*
 * The two wakers behind waker.h, for the lock implementations that make
 * them: a BLPOP on the lock's own connection (wake_pop.c: plain and
 * --redlock waiters; each release leaves one token, so one waiter wakes),
 * or subscriptions on connections of their own (wake_sub.c: the --fair
 * waiter's own channel). Reads use poll(), never a socket timeout, and
 * look at what the transport has already buffered first. Never prints.
 */
#ifndef RLOCK_WAKE_H
#define RLOCK_WAKE_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "server.h"
#include "waker.h"

/* What a waker does; see waker.h for what each means. `sharp`: `until`
 * is the holder's expiry (waker_wait_expiry). */
struct waker_ops {
	int (*listen)(struct waker *w);
	int (*listening)(const struct waker *w);
	enum woke (*wait)(struct waker *w, int64_t until, int sigfd,
	    int sharp);
	void (*cancel)(struct waker *w);
	void (*free)(struct waker *w);
};

/* The part every waker starts with. */
struct waker {
	const struct waker_ops *ops;
	struct failure fail;		/* why the last wait ended WOKE_LOST */
};

/*
 * A command the lock sends right behind a BLPOP: send(arg) writes it (0,
 * or -1 with the failure in the server), so that Redis runs it the moment
 * the BLPOP returns, token or timeout, without a round trip back to us
 * first. Its reply follows the BLPOP's on the connection, and is the
 * lock's to read before the next wait; should the waker close the
 * connection first (a lost, abandoned or cancelled BLPOP), the command
 * may have run unseen, which the lock learns from its closed server.
 */
struct wake_behind {
	int (*send)(void *arg);
	void *arg;
};

/*
 * BLPOP list on s, a server the caller keeps (and uses between waits).
 * With `behind` (NULL: none), its command follows each BLPOP armed by
 * waker_wait_expiry.
 */
struct waker *wake_pop(struct server *s, const char *list, size_t len,
    const struct wake_behind *behind);
/* A BLPOP waker blocks on this list too (exclusive waiters of a KEY that
 * may be shared: a release wakes them alone there, lib/shared.lua). */
void wake_pop_also(struct waker *w, const char *list, size_t len);

/*
 * BLPOP list on one of n servers the caller keeps (a quorum's masters):
 * the first one connected, the next one once that fails. The others'
 * idle connections are watched while waiting, and a wait ends WOKE_LOST
 * as soon as fewer than `need` of the n are connected.
 */
struct waker *wake_pop_any(struct server *const *s, int n, int need,
    const char *list, size_t len);

/*
 * Subscriptions to channel ch on n servers, on connections cloned from
 * like[i]; `need` of them must stay alive, or a wait ends WOKE_LOST.
 * `both`: SUBSCRIBE beside SSUBSCRIBE (another client's channel, which
 * may be published either way).
 */
struct waker *wake_sub(struct server *const *like, int n, int need,
    const char *ch, size_t len, int both);

/*
 * The checks of the replies, apart from the connection so they can be
 * tested and fuzzed alone; r stays the caller's.
 * wake_parse_subscribe: 1 if r confirms a (S)SUBSCRIBE, else 0.
 * wake_parse_unsubscribed: 1 if r says the subscription ended under us.
 * wake_parse_pop: BLPOP's reply: 1 a wake token, 0 timed out (nil), -1
 * anything else.
 */
int wake_parse_subscribe(const struct reply *r);
int wake_parse_unsubscribed(const struct reply *r);
int wake_parse_pop(const struct reply *r);

#endif
