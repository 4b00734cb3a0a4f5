// SPDX-License-Identifier: MIT
/*
 * The renewal loop, which also hears a release --force: between extends
 * it blocks in BLPOP on P{KEY}:broken (lock_listener, where force_release
 * pushes one element for each holder it broke) on a connection of its
 * own (lock_new_like), so that the release never waits for a BLPOP: on
 * the lock's connection, one in flight at COMMAND's end would have to be
 * abandoned with its connection, and the release, which the next holder
 * waits for, would pay a reconnect first. An element is only a hint (one
 * may be left from a release that broke an earlier holder): what counts
 * is Redis's answer to "is it ours?". A connection the server dropped
 * (restart, failover, CLIENT KILL, a Cluster slot that moved) is
 * reconnected and the lock verified at once, so a restart that lost the
 * key is noticed in one round trip instead of at the next tick. Retries
 * are spaced so an outage costs Redis a handful of commands, not a storm.
 */
#include "renew.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"
#include "sig.h"
#include "util.h"

/* COMMAND runs this long before we listen: a run that ends sooner opens
 * no second connection, and one broken meanwhile is still told
 * (force_release's element waits 5 s). */
#define LISTEN_AFTER_MS 250
/* Each BLPOP lasts this long at most, short of the idle timeouts proxies
 * keep, so a quiet holding is not taken for a dead connection. */
#define LISTEN_SPAN_MS 10000
/* Redis times a BLPOP out on its own clock tick, up to 1000/hz ms (100 ms
 * by default) late, and the thread's extend waits behind it: a BLPOP asks
 * for this much less than what is left until the extend, and none is
 * sent when that is less than twice this. */
#define LISTEN_LATE_MS 100
/* After a BLPOP that failed (refused: a user made without +blpop, a
 * proxy without blocking commands; or its connection went), we listen
 * again after a pause that doubles up to LISTEN_RETRY_MAX_MS, so a
 * refusal costs Redis a few commands in that long. */
#define LISTEN_RETRY_MS 100
#define LISTEN_RETRY_MAX_MS 30000

static void
notify(struct renewer *rw)
{
	char b = 1;

	(void)!write(rw->event_pipe[1], &b, 1);
}

/* Remember why this try failed (f), or that it worked (NULL). */
static void
keep_failure(struct renewer *rw, const struct failure *f)
{
	pthread_mutex_lock(&rw->fail_mu);
	if (f != NULL)
		rw->fail = *f;
	else
		failure_clear(&rw->fail);
	pthread_mutex_unlock(&rw->fail_mu);
}

void
renew_failure(struct renewer *rw, struct failure *f)
{
	pthread_mutex_lock(&rw->fail_mu);
	*f = rw->fail;
	pthread_mutex_unlock(&rw->fail_mu);
}

/* Redis says the lock is not ours: tell the main thread. */
static void
not_ours(struct renewer *rw)
{
	atomic_store(&rw->not_ours, 1);
	notify(rw);
}

/*
 * Sleep until `until`, the stop pipe, or traffic on l's idle socket,
 * with mu released meanwhile. Returns 1 stop (a byte, or `stopping`), 2
 * the server closed the idle connection or sent something unasked (it
 * is closed now: start afresh), 0 time is up. The socket is polled by
 * its number, read under mu: should the main thread close or reuse that
 * number meanwhile, the worst is a nap ended early, and `stopping` is
 * set by then.
 */
static int
nap(struct renewer *rw, int64_t until)
{
	struct pollfd p[2] = {
		{ .fd = rw->stop_pipe[0], .events = POLLIN },
		{ .fd = lock_watch_fd(rw->l), .events = POLLIN },
	};
	int n, r = 0;

	pthread_mutex_unlock(&rw->mu);
	while (r == 0 && until - mono_ms() > 0) {
		n = poll(p, 2, deadline_poll_ms(until));
		if (n < 0 && errno != EINTR)
			break;
		r = n <= 0 ? 0 : p[0].revents ? 1 : p[1].revents ? 2 : 0;
	}
	pthread_mutex_lock(&rw->mu);
	if (r == 1 || atomic_load(&rw->stopping))
		return 1;
	if (r == 2) {
		lock_close(rw->l);
		msg_verbose("renewal connection dropped; reconnecting");
	}
	return r;
}

/*
 * Listen for a release --force until a little before `until` (the next
 * extend) on the thread's own lock (lw), mu released meanwhile: the main
 * thread may release on l. Returns as nap does: 1 stop (or Redis says
 * the lock is not ours), 2 renew now (Redis did not say), 0 nothing came,
 * or the BLPOP failed: the nap until listen_at watches l's idle socket,
 * which a restart drops too.
 */
static int
hear(struct renewer *rw, int64_t until)
{
	int64_t end = until - LISTEN_LATE_MS, now = mono_ms(), connect, cmd;
	enum woke r;
	int ours = 1;

	if (end > now + LISTEN_SPAN_MS)
		end = now + LISTEN_SPAN_MS;
	if (rw->lw == NULL) {
		rw->lw = lock_new_like(rw->l);
		/* Bounded as an extend is: the next one waits behind it. */
		lock_timeouts(rw->l, &connect, &cmd);
		lock_set_timeouts(rw->lw, connect, cmd);
	}
	pthread_mutex_unlock(&rw->mu);
	if (!lock_is_open(rw->lw)) {
		/* A new connection is named anew (lock_listener). */
		waker_free(rw->w);
		rw->w = lock_open(rw->lw) == 0 ?
		    lock_listener(rw->lw, rw->ctx) : NULL;
	}
	r = rw->w != NULL ? waker_wait(rw->w, end, rw->stop_pipe[0]) :
	    WOKE_LOST;
	if (r == WOKE_MESSAGE)
		ours = lock_is_ours(rw->lw, rw->ctx);
	pthread_mutex_lock(&rw->mu);
	if (r == WOKE_SIGFD || atomic_load(&rw->stopping))
		return 1;
	if (r == WOKE_LOST) {
		msg_verbose("listening for release --force: %s; reconnecting",
		    (rw->w != NULL ? waker_failure(rw->w) :
		    lock_failure(rw->lw))->why);
		rw->listen_at = mono_ms() + rw->listen_retry;
		rw->listen_retry = lease_clamp(rw->listen_retry * 2, 0,
		    LISTEN_RETRY_MAX_MS);
		return 0;
	}
	rw->listen_retry = LISTEN_RETRY_MS;
	if (ours == 0) {
		msg_verbose("Redis says the lock is no longer ours "
		    "(release --force?)");
		not_ours(rw);
		return 1;
	}
	return ours < 0 ? 2 : 0;
}

/*
 * One renewal, never past rw->hold_until (--max-hold: the last extend
 * asks for a shorter lease, then none is left); returns when the next is
 * due, or -1 once Redis says the lock is not ours (or --max-hold leaves
 * nothing to extend).
 */
static int64_t
renew_once(struct renewer *rw, int *failing)
{
	struct lock_ctx c = *rw->ctx;
	struct pollfd p = { .events = POLLIN };
	int64_t t0;
	int r = -1;

	/* Behind Sentinel, extend where the master is now: the old one may
	 * stay writable for seconds after a failover, and extending there
	 * would keep a lock the new one lets go. */
	(void)lock_recheck(rw->l);
	/* The server may have closed the idle connection while we listened
	 * on ours (an idle timeout): start afresh, not with a failure. */
	p.fd = lock_watch_fd(rw->l);
	if (poll(&p, 1, 0) > 0)
		lock_close(rw->l);
	if (lock_is_open(rw->l) || lock_open(rw->l) == 0) {
		t0 = mono_ms();
		if (rw->hold_until - t0 < 1)
			return -1;
		c.lease_ms = lease_clamp(rw->hold_until - t0, 1, c.lease_ms);
		r = lock_extend(rw->l, &c);
	}
	if (r == 1) {
		atomic_store(&rw->last_ok, t0);
		keep_failure(rw, NULL);
		if (rw->last_ok_too != NULL)
			atomic_store(rw->last_ok_too, t0);
		if (*failing)
			msg_warn("lease extended again after %d failed "
			    "attempt%s", *failing, *failing > 1 ? "s" : "");
		*failing = 0;
		notify(rw);
		return t0 + lease_renew_interval_ms(rw->ctx->lease_ms);
	}
	if (r == 0) {
		not_ours(rw);
		return -1;
	}
	keep_failure(rw, lock_failure(rw->l));
	if (!(*failing)++)
		msg_warn("cannot extend the lease: %s; retrying",
		    lock_failure(rw->l)->why);
	/* An error reply (READONLY, LOADING...) may mean we talk to the
	 * wrong server now: reconnect. */
	lock_close(rw->l);
	return mono_ms() + lease_retry_ms(rw->ctx->lease_ms);
}

/*
 * A parked thread's sleep until renew_start arms it, mu held; 0 if it is
 * stopped first. It looks every lease_park_look_ms, with no word from
 * the main thread (lease.h), so it sees a fresh grant before its first
 * extend is due even with rlock itself suspended in the vfork of an exec
 * that hangs; armed by an older one, renew_start signals it.
 */
static int
parked(struct renewer *rw)
{
	int64_t every = lease_park_look_ms(rw->ctx->lease_ms), t;
	struct timespec at;

	/* mono_ms is CLOCK_MONOTONIC, the clock make_thread gives `park`. */
	while (!rw->armed && !atomic_load(&rw->stopping)) {
		t = mono_ms() + every;
		at = (struct timespec){ t / 1000, t % 1000 * 1000000 };
		(void)pthread_cond_timedwait(&rw->park, &rw->mu, &at);
	}
	return !atomic_load(&rw->stopping);
}

/*
 * l is touched only with mu held, once armed, and never once `stopping`
 * is set: the main thread may then release (or reopen) on it while we
 * still sleep. Between extends the thread listens (hear), or, before
 * LISTEN_AFTER_MS, after a failed BLPOP and near an extend, naps watching
 * l's idle socket.
 */
static void *
renew_loop(void *arg)
{
	struct renewer *rw = arg;
	int64_t next, now;
	int failing = 0, r;

	pthread_mutex_lock(&rw->mu);
	next = !parked(rw) ? -1 : atomic_load(&rw->last_ok) +
	    lease_renew_interval_ms(rw->ctx->lease_ms);
	while (next >= 0 && !atomic_load(&rw->stopping)) {
		now = mono_ms();
		if (now < rw->listen_at || next - now < 2 * LISTEN_LATE_MS)
			r = nap(rw, now < rw->listen_at &&
			    rw->listen_at < next ? rw->listen_at : next);
		else
			r = hear(rw, next);
		if (r == 1)
			break;
		if (r == 0 && mono_ms() < next)
			continue;
		next = renew_once(rw, &failing);
	}
	pthread_mutex_unlock(&rw->mu);
	return NULL;
}

void
renew_init(struct renewer *rw, struct lock *l, const struct lock_ctx *ctx,
    int64_t granted_at)
{
	memset(rw, 0, sizeof(*rw));
	rw->mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	rw->fail_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	rw->l = l;
	rw->ctx = ctx;
	atomic_store(&rw->last_ok, granted_at);
	rw->hold_until = INT64_MAX;
}

static int
make_thread(struct renewer *rw)
{
	pthread_condattr_t a;
	int e;

	if (thread_pipes_open(rw->stop_pipe, rw->event_pipe) < 0)
		return -1;
	/* A parked thread's looks are timed by the monotonic clock. */
	(void)pthread_condattr_init(&a);
	(void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	(void)pthread_cond_init(&rw->park, &a);
	(void)pthread_condattr_destroy(&a);
	if ((e = sig_thread_create(&rw->thread, renew_loop, rw)) != 0) {
		pthread_cond_destroy(&rw->park);
		thread_pipes_close(rw->stop_pipe, rw->event_pipe);
		errno = e;
		return -1;
	}
	rw->running = 1;
	return 0;
}

int
renew_park(struct renewer *rw, struct lock *l, const struct lock_ctx *ctx)
{
	renew_init(rw, l, ctx, 0);
	return make_thread(rw);
}

int
renew_start(struct renewer *rw)
{
	int64_t t;

	/* l is still ours: a parked thread does not touch it. */
	t = lease_try_timeout_ms(rw->ctx->lease_ms,
	    lock_connect_timeout(rw->l));
	lock_set_timeouts(rw->l, t, t);
	rw->listen_at = mono_ms() + LISTEN_AFTER_MS;
	rw->listen_retry = LISTEN_RETRY_MS;
	if (!rw->running) {
		rw->armed = 1;
		return make_thread(rw);
	}
	/* Everything set above, hold_until included, is the thread's to
	 * read once it sees this. */
	pthread_mutex_lock(&rw->mu);
	rw->armed = 1;
	if (lease_park_wake(mono_ms(), atomic_load(&rw->last_ok),
	    rw->ctx->lease_ms))
		pthread_cond_signal(&rw->park);
	else
		rw->wake_at = rw->listen_at;
	pthread_mutex_unlock(&rw->mu);
	return 0;
}

int64_t
renew_wake_due(struct renewer *rw)
{
	int64_t now = mono_ms();

	if (rw->wake_at == 0)
		return -1;
	if (now < rw->wake_at)
		return rw->wake_at - now;
	rw->wake_at = 0;
	/* Armed under mu: a thread not in its wait sees it without this. */
	pthread_cond_signal(&rw->park);
	return -1;
}

/*
 * The thread is not woken here: the caller's next request is the release
 * a waiter waits for, and the wake-up would go first. It wakes on that
 * request's answer (on the socket it watches), on the end of its BLPOP
 * (on a connection of its own), or on renew_stop's word (a parked one
 * too), sees `stopping` and ends.
 */
void
renew_take_conn(struct renewer *rw)
{
	if (!rw->running || atomic_load(&rw->stopping))
		return;
	atomic_store(&rw->stopping, 1);
	pthread_mutex_lock(&rw->mu);
	pthread_mutex_unlock(&rw->mu);
}

void
renew_stop(struct renewer *rw)
{
	char b = 1;

	if (!rw->running)
		return;
	renew_take_conn(rw);
	(void)!write(rw->stop_pipe[1], &b, 1);
	pthread_mutex_lock(&rw->mu);
	pthread_cond_signal(&rw->park);
	pthread_mutex_unlock(&rw->mu);
	pthread_join(rw->thread, NULL);
	rw->running = 0;
	waker_free(rw->w);
	lock_free(rw->lw);
	pthread_cond_destroy(&rw->park);
	thread_pipes_close(rw->stop_pipe, rw->event_pipe);
}
