// SPDX-License-Identifier: MIT
/*
 * The renewal loop. It also watches its idle socket: a connection the
 * server dropped (restart, failover, CLIENT KILL) is reconnected and the
 * lock verified at once, so a restart that lost the key is noticed in one
 * round trip instead of at the next tick. Retries are spaced so an outage
 * costs Redis a handful of commands, not a storm.
 */
#include "renew.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "lease.h"
#include "sig.h"
#include "util.h"

/* Sleep until `until`, the stop pipe, or traffic on our idle socket fd.
 * Returns 1 a byte on the stop pipe (a stop, or renew_start's wake), 2
 * socket event, 0 time is up. */
static int
nap(struct renewer *rw, int fd, int64_t until)
{
	struct pollfd p[2] = {
		{ .fd = rw->stop_pipe[0], .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	int n;

	while (until - mono_ms() > 0) {
		n = poll(p, 2, deadline_poll_ms(until));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		if (p[0].revents)
			return 1;
		if (p[1].revents)
			return 2;
	}
	return 0;
}

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

/*
 * Extend, but never past rw->hold_until (--max-hold): 1 extended, 0 not
 * ours, -1 error, 2 nothing left to extend.
 */
static int
extend_until(struct renewer *rw, int64_t t0)
{
	struct lock_ctx capped;

	if (rw->hold_until - t0 >= rw->ctx->lease_ms)
		return lock_extend(rw->l, rw->ctx);
	if (rw->hold_until - t0 < 1)
		return 2;
	capped = *rw->ctx;
	capped.lease_ms = rw->hold_until - t0;
	return lock_extend(rw->l, &capped);
}

/* One renewal after a nap that ended with `why` (nap's 0 or 2); returns
 * when the next is due, or -1 once Redis says the lock is not ours (or
 * --max-hold leaves nothing to extend). */
static int64_t
renew_once(struct renewer *rw, int why, int *failing)
{
	int64_t lease = rw->ctx->lease_ms, t0;
	int64_t retry = lease_retry_ms(lease);
	int r;

	if (why == 2) {
		/* The server closed our idle connection, or sent something
		 * unasked: either way, start afresh. */
		lock_close(rw->l);
		msg_verbose("renewal connection dropped; reconnecting");
	}
	/* Behind Sentinel, extend where the master is now: the old one may
	 * stay writable for seconds after a failover, and extending there
	 * would keep a lock the new one lets go. */
	(void)lock_recheck(rw->l);
	if (!lock_is_open(rw->l) && lock_open(rw->l) != 0) {
		keep_failure(rw, lock_failure(rw->l));
		if (!(*failing)++)
			msg_warn("cannot extend the lease: %s; retrying",
			    lock_failure(rw->l)->why);
		return mono_ms() + retry;
	}
	t0 = mono_ms();
	if ((r = extend_until(rw, t0)) == 2)
		return -1;
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
		return t0 + lease_renew_interval_ms(lease);
	}
	if (r == 0) {
		atomic_store(&rw->not_ours, 1);
		notify(rw);
		return -1;
	}
	keep_failure(rw, lock_failure(rw->l));
	if (!(*failing)++)
		msg_warn("cannot extend the lease: %s; retrying",
		    lock_failure(rw->l)->why);
	/* An error reply (READONLY, LOADING...) may mean we talk to the
	 * wrong server now: reconnect. */
	lock_close(rw->l);
	return mono_ms() + retry;
}

/*
 * A parked thread's sleep until renew_start arms it; 0 if it is stopped
 * first. It looks every lease_park_look_ms, with no word from the main
 * thread (lease.h), so it sees a fresh grant before its first extend is
 * due even with rlock itself suspended in the vfork of an exec that
 * hangs; armed by an older one, renew_start writes it a byte. A byte seen
 * armed is drained and taken for that one (as is one the loop finds
 * later): a stop byte always follows `stopping`, which the loop checks
 * under mu before anything else.
 */
static int
parked(struct renewer *rw)
{
	struct pollfd p = { .fd = rw->stop_pipe[0], .events = POLLIN };
	int every = (int)lease_park_look_ms(rw->ctx->lease_ms), n;
	char b;

	while (!atomic_load(&rw->armed)) {
		n = poll(&p, 1, every);
		if (n > 0 && !atomic_load(&rw->armed))
			return 0;
		if (n > 0)
			(void)!read(rw->stop_pipe[0], &b, 1);
		else if (n < 0 && errno != EINTR)
			nap_ms(10);
	}
	return 1;
}

/*
 * l is touched only once armed, with mu held, and never once `stopping`
 * is set: the main thread may then release (or reopen) on it while we
 * still sleep. The nap polls the socket by its number, read under mu:
 * should the main thread close or reuse that number meanwhile, the worst
 * is a nap ended early, and `stopping` is set by then.
 */
static void *
renew_loop(void *arg)
{
	struct renewer *rw = arg;
	int64_t next;
	int failing = 0, fd, r;
	char b;

	if (!parked(rw))
		return NULL;
	next = atomic_load(&rw->last_ok) +
	    lease_renew_interval_ms(rw->ctx->lease_ms);
	pthread_mutex_lock(&rw->mu);
	while (!rw->stopping && next >= 0) {
		fd = lock_watch_fd(rw->l);
		pthread_mutex_unlock(&rw->mu);
		r = nap(rw, fd, next);
		pthread_mutex_lock(&rw->mu);
		if (rw->stopping)
			break;
		/* Not a stop: renew_start's wake, seen after the thread
		 * found itself armed by a look. */
		if (r == 1) {
			(void)!read(rw->stop_pipe[0], &b, 1);
			continue;
		}
		next = renew_once(rw, r, &failing);
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
	rw->stop_pipe[0] = rw->stop_pipe[1] = -1;
	rw->event_pipe[0] = rw->event_pipe[1] = -1;
	atomic_store(&rw->last_ok, granted_at);
	rw->hold_until = INT64_MAX;
}

static int
make_thread(struct renewer *rw)
{
	int e;

	/* Non-blocking: the thread drains it holding mu, which a read that
	 * blocked would keep from renew_take_conn. */
	if (thread_pipes_open(rw->stop_pipe, rw->event_pipe) < 0)
		return -1;
	if ((e = sig_thread_create(&rw->thread, renew_loop, rw)) != 0) {
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

void
renew_granted(struct renewer *rw, int64_t granted_at)
{
	atomic_store(&rw->last_ok, granted_at);
}

int
renew_start(struct renewer *rw)
{
	int64_t t;

	if (atomic_load(&rw->armed))
		return 0;
	/* l is still ours: a parked thread does not touch it. */
	t = lease_try_timeout_ms(rw->ctx->lease_ms,
	    lock_connect_timeout(rw->l));
	lock_set_timeouts(rw->l, t, t);
	/* Everything set above, hold_until included, is the thread's to
	 * read once it sees this. */
	atomic_store(&rw->armed, 1);
	if (rw->running) {
		if (lease_park_wake(mono_ms(), atomic_load(&rw->last_ok),
		    rw->ctx->lease_ms))
			(void)!write(rw->stop_pipe[1], "", 1);
		return 0;
	}
	if (make_thread(rw) < 0) {
		atomic_store(&rw->armed, 0);
		return -1;
	}
	return 0;
}

static void
tell_stop(struct renewer *rw)
{
	char b = 1;

	if (!rw->told) {
		rw->told = 1;
		(void)!write(rw->stop_pipe[1], &b, 1);
	}
}

/*
 * The thread is not woken here: the caller's next request is the release
 * a waiter waits for, and the wake-up would go first. It wakes on that
 * request's answer (on the socket it watches), or on renew_stop's stop
 * byte, sees `stopping` and ends.
 */
void
renew_take_conn(struct renewer *rw)
{
	if (!rw->running || rw->stopping)
		return;
	pthread_mutex_lock(&rw->mu);
	rw->stopping = 1;
	pthread_mutex_unlock(&rw->mu);
}

void
renew_stop(struct renewer *rw)
{
	if (!rw->running)
		return;
	renew_take_conn(rw);
	tell_stop(rw);
	pthread_join(rw->thread, NULL);
	rw->running = 0;
	thread_pipes_close(rw->stop_pipe, rw->event_pipe);
}

int
renew_event_fd(const struct renewer *rw)
{
	return rw->event_pipe[0];
}
