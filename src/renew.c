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
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 1000

static int64_t
clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Sleep until `until`, the stop pipe, or traffic on our idle socket.
 * Returns 1 stop, 2 socket event, 0 time is up. */
static int
nap(struct renewer *rw, int64_t until)
{
	struct pollfd p[2] = {
		{ .fd = rw->stop_pipe[0], .events = POLLIN },
		{ .fd = conn_fd(rw->cn), .events = POLLIN },
	};
	int64_t left;
	int n;

	while ((left = until - mono_ms()) > 0) {
		n = poll(p, 2, (int)(left > 60000 ? 60000 : left));
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

static void *
renew_loop(void *arg)
{
	struct renewer *rw = arg;
	int64_t lease = rw->ctx->lease_ms, interval = lease / 3;
	int64_t retry = clamp(lease / 10, RETRY_MIN_MS, RETRY_MAX_MS);
	int64_t next = atomic_load(&rw->last_ok) + interval, t0;
	int failing = 0, r;

	for (;;) {
		r = nap(rw, next);
		if (r == 1)
			break;
		if (r == 2) {
			/* The server closed our idle connection, or sent
			 * something unasked: either way, start afresh. */
			conn_close(rw->cn);
			msg_verbose("renewal connection dropped; reconnecting");
		}
		/* Behind Sentinel, extend where the master is now: the old
		 * one may stay writable for seconds after a failover, and
		 * extending there would keep a lock the new one lets go. */
		(void)conn_recheck(rw->cn);
		if (!conn_is_open(rw->cn) && conn_reopen(rw->cn) != 0) {
			if (!failing++)
				msg_warn("cannot extend the lease: %s; "
				    "retrying", rw->cn->err);
			next = mono_ms() + retry;
			continue;
		}
		t0 = mono_ms();
		r = lock_extend(rw->cn, rw->ctx);
		if (r == 1) {
			atomic_store(&rw->last_ok, t0);
			if (failing)
				msg_warn("lease extended again after %d failed "
				    "attempt%s", failing, failing > 1 ? "s" : "");
			failing = 0;
			next = t0 + interval;
			notify(rw);
		} else if (r == 0) {
			atomic_store(&rw->not_ours, 1);
			notify(rw);
			break;
		} else {
			if (!failing++)
				msg_warn("cannot extend the lease: %s; "
				    "retrying", rw->cn->err);
			/* An error reply (READONLY, LOADING...) may mean we
			 * talk to the wrong server now: reconnect. */
			conn_close(rw->cn);
			next = mono_ms() + retry;
		}
	}
	return NULL;
}

int
renew_start(struct renewer *rw, struct conn *cn, const struct lock_ctx *ctx,
    int64_t granted_at)
{
	int64_t lease = ctx->lease_ms, t;
	int e;

	memset(rw, 0, sizeof(*rw));
	rw->cn = cn;
	rw->ctx = ctx;
	atomic_store(&rw->last_ok, granted_at);
	if (pipe2(rw->stop_pipe, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(rw->event_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		e = errno;
		close(rw->stop_pipe[0]);
		close(rw->stop_pipe[1]);
		errno = e;
		return -1;
	}
	/* Each try must end well before the lease does: a fifth of it,
	 * never more than the user's connect timeout. */
	t = clamp(lease / 5, RETRY_MIN_MS, cn->cfg->connect_timeout_ms);
	conn_set_timeouts(cn, t, t);
	if ((e = pthread_create(&rw->thread, NULL, renew_loop, rw)) != 0) {
		close(rw->stop_pipe[0]);
		close(rw->stop_pipe[1]);
		close(rw->event_pipe[0]);
		close(rw->event_pipe[1]);
		errno = e;
		return -1;
	}
	rw->running = 1;
	return 0;
}

void
renew_stop(struct renewer *rw)
{
	char b = 1;

	if (!rw->running)
		return;
	(void)!write(rw->stop_pipe[1], &b, 1);
	pthread_join(rw->thread, NULL);
	rw->running = 0;
	close(rw->stop_pipe[0]);
	close(rw->stop_pipe[1]);
	close(rw->event_pipe[0]);
	close(rw->event_pipe[1]);
}

int
renew_event_fd(const struct renewer *rw)
{
	return rw->event_pipe[0];
}
