/* SPDX-License-Identifier: MIT */
/*
 * The renewal thread: extends the lease every lease/3 on the holder's
 * connection, reconnecting and retrying on errors, and between extends
 * listens for a release --force on a connection of its own; it tells the
 * main thread through a pipe when Redis says the lock is no longer ours.
 * It never exits the process and never decides what to do about a loss.
 */
#ifndef RLOCK_RENEW_H
#define RLOCK_RENEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "lock.h"

struct renewer {
	pthread_t thread;
	pthread_mutex_t mu;		/* held while the thread uses l */
	struct lock *l;			/* the thread's from renew_start
					 * until renew_take_conn */
	const struct lock_ctx *ctx;
	int stop_pipe[2];
	int event_pipe[2];		/* read end: readable (a byte to
					 * drain) when the state changed */
	_Atomic int64_t last_ok;	/* mono ms: last good extend's start */
	_Atomic int not_ours;		/* Redis said: someone else's lock */
	/* Why the extends fail since the last good one (FAIL_NONE while
	 * they work), for the words of a lost lease: the thread writes
	 * it, the main thread reads it with renew_failure. */
	pthread_mutex_t fail_mu;
	struct failure fail;
	/* Under mu: renew_start was called; until then a parked thread
	 * must not touch l, which the waiter still uses. It waits on
	 * `park`, which a stop signals too. */
	int armed;
	pthread_cond_t park;
	_Atomic int stopping;		/* l is the caller's again */
	int running;			/* started, not yet joined */
	int64_t wake_at;		/* renew_wake_due's; 0 none */
	/* --max-hold: mono ms no extend may reach past (a last one gets a
	 * shorter lease; then none); INT64_MAX by default. Set before
	 * renew_start. */
	int64_t hold_until;
	/* Where last_ok is stored too (the watcher's page, watch.h), or
	 * NULL. Set before renew_start. */
	_Atomic int64_t *last_ok_too;
	/* The thread's own: the lock it listens on (a second connection,
	 * so that the release never waits for a BLPOP), its listener
	 * (lock_listener), when it listens again after a failed BLPOP, and
	 * that pause. */
	struct lock *lw;
	struct waker *w;
	int64_t listen_at, listen_retry;
};

/*
 * Prepare to renew ctx's lease on l, counting from granted_at, without
 * a thread yet: last_ok and not_ours are valid from here on, and
 * renew_stop is harmless.
 */
void renew_init(struct renewer *rw, struct lock *l,
    const struct lock_ctx *ctx, int64_t granted_at);

/*
 * Make the thread ahead of the grant, while waiting for the lock, so a
 * hand-off does not wait for pthread_create (and the vfork right behind
 * a new thread is slower too): it sleeps, touching nothing of l, until
 * renew_start, and renew_stop ends it if the lock never comes. The grant
 * is stored in last_ok before renew_start. Returns 0 or -1 (errno), as
 * renew_start.
 */
int renew_park(struct renewer *rw, struct lock *l,
    const struct lock_ctx *ctx);

/*
 * Start renewing (start the thread, or arm a parked one: it looks for
 * this every lease/6, and is woken when that look could come after its
 * first extend is due); l is the thread's until renew_take_conn. The
 * first extend is due at last_ok + lease/3 however late this is called.
 * Returns 0 or -1 (errno).
 */
int renew_start(struct renewer *rw);

/*
 * A parked thread armed by renew_start sees it at its next look, every
 * sixth of the lease: maybe later than it is to listen for a release
 * --force. The supervisor calls this, which wakes the thread then; ms
 * until that, or -1. Main thread only.
 */
int64_t renew_wake_due(struct renewer *rw);

/*
 * Make l the caller's again at once: waits only for an extend in flight,
 * and the thread never touches l (nor extends) after this returns. The
 * thread is not woken (the release goes first): it ends when it next
 * wakes, on the release's answer or renew_stop's word, which also joins
 * it. Idempotent.
 */
void renew_take_conn(struct renewer *rw);

/* Take l back and join the thread. Idempotent. */
void renew_stop(struct renewer *rw);

/*
 * Copy into *f why the latest extend (or the reconnect before it) failed,
 * or a failure of FAIL_NONE when the last one worked. Safe while the
 * thread runs, and never waits for an extend in flight.
 */
void renew_failure(struct renewer *rw, struct failure *f);

#endif
