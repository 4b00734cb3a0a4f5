/* SPDX-License-Identifier: MIT */
/*
 * How a waiter is woken, as the lock layer arranges it: a BLPOP on the
 * lock's own connection (plain and --redlock waiters: each release leaves
 * one token, so one waiter wakes), or a subscription on a connection of
 * its own (the --fair waiter's own channel).
 * Reads use poll(), never a socket timeout, and look at what the
 * transport has already buffered first. Never prints.
 */
#ifndef RLOCK_WAKE_H
#define RLOCK_WAKE_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "server.h"

enum woke {
	WOKE_MESSAGE,		/* a wake-up arrived */
	WOKE_NEXT,		/* only "next" (queue.lua): look soon */
	WOKE_TIMEOUT,		/* `until` came first */
	WOKE_LOST,		/* the connection(s) went: try, then listen */
	WOKE_SIGFD		/* the signal fd is readable: look, call again */
};

struct waker;

/* BLPOP list on s, a server the caller keeps (and uses between waits). */
struct waker *wake_pop(struct server *s, const char *list, size_t len);
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
 */
struct waker *wake_sub(struct server *const *like, int n, int need,
    const char *ch, size_t len);

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

/*
 * One BLPOP (n 1), on a plain server: fn(arg) sends a command right
 * behind each BLPOP armed by waker_wait_expiry (0 when sent), so that
 * Redis runs it the moment the BLPOP returns, token or timeout, without
 * a round trip back to us first. Its reply is the caller's to read next:
 * once a wait has ended WOKE_MESSAGE or WOKE_TIMEOUT, waker_followed says
 * whether it is owed, and waker_take_follow hands it over (1) and forgets
 * it; until then no BLPOP is armed (waker_wait returns WOKE_TIMEOUT). A
 * connection closed with one owed (a lost, abandoned or cancelled BLPOP)
 * leaves waker_follow_lost set: the command may have run.
 */
typedef int (*waker_follow_fn)(void *arg);
void waker_follow(struct waker *w, waker_follow_fn fn, void *arg);
int waker_followed(const struct waker *w);
int waker_take_follow(struct waker *w);
int waker_follow_lost(const struct waker *w);

/* Abandon a BLPOP in flight (its connection is closed) and close the
 * subscriptions; the next waker_listen/waker_wait starts afresh. */
void waker_cancel(struct waker *w);

/* Why the last wait ended WOKE_LOST. */
const struct failure *waker_failure(const struct waker *w);

void waker_free(struct waker *w);

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
