// SPDX-License-Identifier: MIT
/*
 * The waiting loop, over whatever the lock layer's waker listens to
 * (wake.h). Order matters: listen first, then try, then block; a release
 * between our try and our block is then a message already queued for us,
 * not a lost wake-up. A --fair waiter listens on its own
 * P{KEY}:wake:TOKEN, and joins the queue only while subscribed: the
 * scripts take a queued waiter nobody hears for dead (queue.lua), which
 * is how a killed one is passed over at once. If the subscription drops,
 * the waiter subscribes again and then joins again, saying it is back:
 * where the server changed under the queue (a restart, a failover) it
 * keeps its place if it is back within the grace the scripts give then;
 * where the server stayed, it may have lost its place meanwhile, and
 * joins at the back. Plain waiters block in BLPOP on P{KEY}:tok, where each
 * release leaves one token: Redis gives it to the oldest blocked waiter, so
 * a release wakes one process, not a herd, and a token pushed between our
 * try and our BLPOP waits for us; on one plain server the lock sends our
 * next attempt right behind the BLPOP (lock_waker), and we read its answer
 * when the BLPOP returns. Between attempts the only traffic is a
 * --fair waiter's refresh of its :w key (every 30 s), and the looks of the
 * one next in line while the head has yet to take a free KEY
 * (HANDOFF_LOOK_MS). A holder that is
 * not rlock wakes nobody when it lets go: its plain waiters sleep without
 * BLPOP and, like the head of a --fair queue, look once a second whether
 * it is gone (lock_look_foreign).
 */
#include "wait.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "exitcode.h"
#include "lease.h"
#include "sig.h"
#include "util.h"
#include "waitline.h"

/* Wake a little after the holder's lease ends: Redis expires keys on
 * access at the exact millisecond, so a couple of ms cover our rounding. */
#define EXPIRY_SLACK_MS 3
/* A holder without expiry that is not foreign (no :meta) cannot be
 * rlock's either; back off up to this. Foreign ones: FOREIGN_LOOK_MS. */
#define NO_TTL_BACKOFF_MAX_MS 5000
#define REDRAW_MS 1000
/* Behind Sentinel, a waiter asks this often whether the master moved
 * (the old one may stay writable, and silent, for seconds). */
#define SENTINEL_RECHECK_MS 1000
/* The undo of an uncertain attempt may run this long past the end of a
 * --timeout: rlock must exit within a second of it (Bounds). */
#define UNDO_PAST_DEADLINE_MS 500
/* The attempt made when a --timeout runs out has this long to answer;
 * an attempt tries again at once only after a failure this quick (a
 * dropped connection, not a silent server). */
#define LAST_TRY_MS 400

struct waiter {
	struct lock *l;
	struct waker *wk;		/* how a release reaches us */
	const struct lock_ctx *ctx;
	struct waitline line;
	int sigfd;
	int64_t deadline;		/* INT64_MAX: forever */
	int64_t no_ttl_backoff;
	int64_t next_beat;		/* --fair :w key refresh due */
	int queued;			/* we are in the --fair queue */
	int writer;			/* readers wait for us (P{K}:xw) */
	int expiry;			/* the retry is the holder's expiry */
	int uncertain;			/* an attempt's outcome is unknown */
	int caps;			/* lock_caps */
	/* --- a foreign holder (lock_look_foreign): look, not BLPOP --- */
	int look;
	int64_t busy_at;		/* when the last busy reply came */
	struct wait_result *res;
	/* --- bounds and weather (retry_backoff_ms) --- */
	int64_t wait_ms;		/* as given: 0 is -n, -1 forever */
	int64_t bound;			/* no I/O past this (INT64_MAX: none) */
	int64_t con0, cmd0;		/* the timeouts the caller set */
	int64_t down_since;		/* mono ms Redis stopped answering; 0 */
	int backoffs;			/* failed tries since down_since */
	int64_t tried_at;		/* when the last attempt began */
	int no_time;			/* attempt() found the bound passed */
};

/* waker_wait's outcomes, and one of ours: a signal that ends the wait. */
#define WOKE_SIGNAL (-1)
/* weather's, beside a wait_status: the wait goes on. */
#define RIDE_ON (-1)

/*
 * Did the lock send an attempt behind the BLPOP that just returned
 * (lock_waker)? 1 when its answer is there to read (*sent_at: when it was
 * sent). One whose connection closed first may have been granted unseen.
 */
static int
sent_behind(struct waiter *w, int64_t *sent_at)
{
	int r = lock_acquire_pending(w->l, sent_at);

	if (r < 0)
		w->uncertain = 1;
	return r > 0;
}

/*
 * The attempt sent behind the BLPOP was granted, and it was sent longer
 * than a renewal interval ago: a long wait, as any old grant is confirmed
 * with one extend before COMMAND, or a waiter stopped (^Z, SIGSTOP) while
 * Redis ran the attempt, whose lease may have run out and KEY gone to
 * another meanwhile. Confirmed here, while we are still waiting: a grant
 * not ours any more was passed on while we did not listen, and we go on
 * waiting (one more attempt tells us for how long), instead of ending the
 * run as a lease lost before COMMAND. Each try is bounded as supervise.c
 * bounds it; not reached (-1), supervise.c's own confirmation decides, as
 * for any old grant.
 */
static enum lock_result
confirm_late(struct waiter *w, int queue, int want, struct wait_result *res,
    struct lock_busy *busy)
{
	int64_t t0 = mono_ms(), con, cmd, t;
	int r;

	lock_timeouts(w->l, &con, &cmd);
	if (t0 - res->granted_at < lease_renew_interval_ms(w->ctx->lease_ms))
		return LOCK_GRANTED;
	t = lease_try_timeout_ms(w->ctx->lease_ms, lock_connect_timeout(w->l));
	lock_set_timeouts(w->l, t, t);
	if ((r = lock_extend(w->l, w->ctx)) == 1)
		res->granted_at = t0;
	if (r != 0)
		return LOCK_GRANTED;
	lock_set_timeouts(w->l, con, cmd);
	msg_verbose("the grant of an attempt sent %lldms ago is no longer "
	    "ours; waiting on", (long long)(t0 - res->granted_at));
	res->granted_at = res->heard_at = mono_ms();
	return lock_acquire(w->l, w->ctx, queue, want, &res->fence, busy);
}

/*
 * Cap the lock's timeouts so that what it waits for next ends by `end`
 * (mono ms) at the latest: 0 when that time has already come.
 */
static int
bound_to(struct waiter *w, int64_t end)
{
	int64_t left = end - mono_ms();

	if (left <= 0)
		return 0;
	lock_set_timeouts(w->l, min64(left, w->con0), min64(left, w->cmd0));
	return 1;
}

/* When an attempt starting now must be over: --connect-timeout from
 * now, and never past the wait's own bound. */
static int64_t
attempt_end(const struct waiter *w)
{
	return min64(mono_ms() + lock_connect_timeout(w->l), w->bound);
}

/* One attempt; reconnects once on a connection that dropped at once
 * (acquire is idempotent per token, so repeating it is safe), except
 * under --nonblock, which never tries twice, and at a run's first contact. */
static enum lock_result
attempt(struct waiter *w, int queue, struct wait_result *res,
    struct lock_busy *busy)
{
	int want = w->line.on || msg_level >= MSG_VERBOSE;
	int64_t end = attempt_end(w);
	enum lock_result lr;
	int64_t sent;
	int tries;

	w->tried_at = mono_ms();
	for (tries = 0; tries < (w->wait_ms == 0 ? 1 : 2); tries++) {
		/* Out of time before the first try (a late wake-up on a
		 * busy machine): nothing changed since the last outcome,
		 * a reply that KEY is held, or a failure (ran_out). */
		if (!bound_to(w, end)) {
			if (tries > 0)
				return LOCK_ERROR;
			w->no_time = w->down_since != 0;
			return w->no_time ? LOCK_ERROR : LOCK_BUSY;
		}
		/* Sent behind the BLPOP that just returned: its answer is
		 * already on its way. */
		if (sent_behind(w, &sent)) {
			res->granted_at = sent;
			res->heard_at = mono_ms();
			lr = lock_acquire_finish(w->l, w->ctx, &res->fence,
			    busy);
			if (lr == LOCK_GRANTED)
				lr = confirm_late(w, queue, want, res, busy);
		} else {
			if (!lock_is_open(w->l) && lock_open(w->l) != 0)
				return LOCK_ERROR;
			res->granted_at = res->heard_at = mono_ms();
			lr = lock_acquire(w->l, w->ctx, queue, want,
			    &res->fence, busy);
		}
		if (lr == LOCK_BUSY && busy->writer == 1)
			w->writer = 1;
		if (lr == LOCK_BUSY && busy->position >= 0 && !w->queued) {
			trace_event("queued");
			w->queued = 1;
			w->next_beat = mono_ms() + WAITER_BEAT_MS;
		}
		/* Who looks at a foreign holder: a lock that can (a quorum
		 * tries instead), of a --fair queue the head only. */
		if (lr == LOCK_BUSY) {
			w->busy_at = mono_ms();
			w->look = busy->foreign && (w->caps & LOCK_CAN_LOOK) &&
			    (!w->ctx->fair || busy->position <= 0);
		}
		if (lr != LOCK_ERROR)
			return lr;
		/* An error reply, not I/O. */
		if (lock_is_open(w->l))
			return LOCK_ERROR;
		w->uncertain = 1;
		/* Not at once on a run's first contact: a connection just
		 * opened that drops most likely refused something asked
		 * ahead of the acquire (a proxy: guard_refused), which the
		 * caller tells apart; -w rides it out as weather. */
		if (!w->res->answered || sig_stopping() ||
		    mono_ms() - w->tried_at > LAST_TRY_MS)
			return LOCK_ERROR;
	}
	return LOCK_ERROR;
}

/* When the next attempt is worth making, from the busy reply. */
static int64_t
retry_at(struct waiter *w, const struct lock_busy *b)
{
	int64_t now = mono_ms(), t;

	/* A retry before the holder's lease ends (an exclusive waiter that
	 * renews its claim on the readers) needs no sharp wake-up. */
	w->expiry = b->lease_left_ms < 0 || b->wait_ms >= b->lease_left_ms;
	if (b->wait_ms >= 0) {
		t = b->wait_ms + EXPIRY_SLACK_MS;
		w->no_ttl_backoff = 100;
	} else {
		t = w->no_ttl_backoff;
		w->no_ttl_backoff = t * 2 < NO_TTL_BACKOFF_MAX_MS ? t * 2 :
		    NO_TTL_BACKOFF_MAX_MS;
	}
	/* A foreign holder's end wakes nobody: try (--redlock) or look
	 * (still_foreign) again within a second. */
	if (b->foreign && (!w->ctx->fair || b->position <= 0) &&
	    (b->wait_ms < 0 || t > FOREIGN_LOOK_MS))
		t = FOREIGN_LOOK_MS;
	return min64(now + t, w->deadline);
}

/* A signal that should end the wait, if one is pending (any but
 * SIGCHLD, which is read and passed over). */
static int
stop_signal(struct waiter *w)
{
	return (w->res->signo = sig_take_stop(w->sigfd)) != 0;
}

/*
 * After a sleep on a foreign holder: 1 when a look finds it still there
 * (sleep again; the reply's wait is aged for retry_at), 0 when an attempt
 * is due (gone, rlock's own holder now, the deadline, a failure).
 */
static int
still_foreign(struct waiter *w, struct lock_busy *b)
{
	int64_t now = mono_ms(), aged = now - w->busy_at;

	if (!w->look || now >= w->deadline || !lock_is_open(w->l) ||
	    sent_behind(w, NULL) ||
	    lock_look_foreign(w->l, w->ctx) != 1)
		return 0;
	if (b->wait_ms >= 0)
		b->wait_ms = b->wait_ms > aged ? b->wait_ms - aged : 0;
	w->busy_at = now;
	return 1;
}

/* A plain waiter's sleep between looks: no BLPOP, no command at all. */
static int
block_quiet(struct waiter *w, int64_t until)
{
	struct pollfd p = { .fd = w->sigfd, .events = POLLIN };
	int n;

	while (mono_ms() < until) {
		n = poll(&p, 1, deadline_poll_ms(until));
		if (n < 0 && errno != EINTR)
			return WOKE_TIMEOUT;
		if (n > 0 && stop_signal(w))
			return WOKE_SIGNAL;
	}
	return WOKE_TIMEOUT;
}

/*
 * Sleep until the retry time, a wake message or a signal, keeping our
 * queue place alive and the wait line fresh on the way.
 */
static int
sleep_until(struct waiter *w, int64_t retry)
{
	int why;
	int64_t until;

	for (;;) {
		until = retry;
		if (w->queued && w->next_beat < until)
			until = w->next_beat;
		if (w->line.on && mono_ms() + REDRAW_MS < until)
			until = mono_ms() + REDRAW_MS;
		if (w->caps & LOCK_FAILOVER)
			until = min64(until, mono_ms() + SENTINEL_RECHECK_MS);
		/* Block on the waker until `until`, a wake-up or a signal
		 * that ends the wait (any other signal, SIGCHLD, is read and
		 * the wait goes on); to the millisecond when until is the
		 * holder's expiry. */
		if (w->look && !w->ctx->fair)
			why = block_quiet(w, until);
		else if (until == retry && w->expiry)
			why = waker_wait_expiry(w->wk, until, w->sigfd);
		else
			why = waker_wait(w->wk, until, w->sigfd);
		if (why == WOKE_SIGFD && stop_signal(w)) {
			waker_cancel(w->wk);
			return WOKE_SIGNAL;
		}
		if (why == WOKE_SIGFD)
			continue;
		/* The attempt sent behind the BLPOP has answered, or will:
		 * it is the caller's to read now. */
		if (why == WOKE_TIMEOUT && sent_behind(w, NULL))
			return WOKE_TIMEOUT;
		/* Next after the --fair head: our look, soon, tells a head
		 * that does not take its turn; trying now would only slow
		 * the head's own attempt. */
		if (why == WOKE_NEXT) {
			if (retry > mono_ms() + HANDOFF_LOOK_MS)
				retry = mono_ms() + HANDOFF_LOOK_MS;
			continue;
		}
		if (why != WOKE_TIMEOUT)
			return why;
		/* A failover: releases happen on the new master now. */
		if ((w->caps & LOCK_FAILOVER) && lock_recheck(w->l)) {
			waker_cancel(w->wk);
			return WOKE_LOST;
		}
		if (mono_ms() >= retry)
			return WOKE_TIMEOUT;
		if (w->queued && mono_ms() >= w->next_beat) {
			/* A failed beat is repaired by the next attempt. */
			if (!lock_is_open(w->l) || lock_heartbeat(w->l,
			    w->ctx) < 0)
				msg_verbose("heartbeat failed: %s",
				    lock_failure(w->l)->why);
			w->next_beat = mono_ms() + WAITER_BEAT_MS;
		}
		waitline_draw(&w->line);
	}
}

/* The wait is over: nothing more to draw or hear, the lock's timeouts
 * as the caller set them. */
static enum wait_status
done(struct waiter *w, enum wait_status st)
{
	waitline_clear(&w->line);
	waker_free(w->wk);
	w->wk = NULL;
	lock_set_timeouts(w->l, w->con0, w->cmd0);
	return st;
}

/*
 * The undo too ends within a second of the wait's bound (Bounds): of a
 * --timeout, or of the last attempt's --connect-timeout, or of the
 * signal that ended the wait, which still leaves it a moment to take our
 * queue place back.
 */
static int64_t
undo_end(const struct waiter *w, enum wait_status st)
{
	int64_t now = mono_ms(), end;

	if (st == WAIT_SIGNAL)
		return now + SIG_UNDO_MS;
	end = w->wait_ms > 0 ? w->deadline : w->wait_ms == 0 ? w->bound :
	    w->tried_at + lock_connect_timeout(w->l);
	return (end > now ? end : now) + UNDO_PAST_DEADLINE_MS;
}

/* Leave no trace: the queue place, and a grant we may have got unseen.
 * Still subscribed while we leave the queue, so nobody drops us from it
 * first and the turn we may hold is passed on by our dequeue. */
static enum wait_status
give_up(struct waiter *w, enum wait_status st)
{
	/* The undo is what a stop signal asks for: it must not end it. */
	int stop = sig_stop_watch(0);

	waitline_clear(&w->line);
	/* An attempt sent behind a BLPOP and not read (a signal, or its
	 * connection lost): it may have been granted. */
	if (lock_acquire_pending(w->l, NULL) != 0)
		w->uncertain = 1;
	if ((w->queued || w->writer || w->uncertain) &&
	    bound_to(w, undo_end(w, st)) &&
	    (lock_is_open(w->l) || lock_open(w->l) == 0)) {
		if (w->queued || w->writer)
			(void)lock_dequeue(w->l, w->ctx);
		if (w->uncertain)
			(void)lock_release(w->l, w->ctx);
	}
	(void)done(w, st);
	(void)sig_stop_watch(stop);
	return st;
}

/* An attempt was answered (b: busy, or NULL), after weather or not. */
static void
back_up(struct waiter *w, const struct lock_busy *b)
{
	w->res->answered = 1;
	if (w->down_since == 0)
		return;
	if (w->ctx->fair && b != NULL && b->position >= 0)
		msg_verbose("Redis answers again after %lldms; our place in "
		    "the --fair queue: %lld", (long long)(mono_ms() -
		    w->down_since), b->position + 1);
	else
		msg_verbose("Redis answers again after %lldms",
		    (long long)(mono_ms() - w->down_since));
	w->down_since = 0;
}

static enum wait_status
granted(struct waiter *w, int64_t start, int why)
{
	/* Granted before the waker was made: no wait to speak of. */
	int waited = w->wk != NULL;

	trace_event("grant");
	back_up(w, NULL);
	(void)done(w, WAIT_GRANTED);
	if (waited)
		msg_verbose("acquired after %lldms of waiting (%s)",
		    (long long)(mono_ms() - start), why == WOKE_MESSAGE ?
		    "woken by a release" : w->look ? "a look found the holder, "
		    "a client other than rlock, gone" :
		    "the holder's lease ran out");
	return WAIT_GRANTED;
}

/*
 * The wait ran out while Redis did not answer: 69, with the last failure
 * and since when (a --timeout that ran out while Redis answered that KEY
 * is held is 75, as any).
 */
static enum wait_status
ran_out(struct waiter *w)
{
	char since[32], d[32];
	/* On the wall clock, as the user reads it. */
	time_t t = (time_t)((wall_ms() - mono_ms() + w->down_since) / 1000);
	struct tm tm;
	struct failure *f = &w->res->fail;
	size_t n = strlen(f->why);

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(since, sizeof(since), "%H:%M:%S", &tm) == 0)
		snprintf(since, sizeof(since), "?");
	dur_format(mono_ms() - w->down_since, d, sizeof(d));
	snprintf(f->why + n, sizeof(f->why) - n, " (unreachable "
	    "since %s, for %s)", since, d);
	return give_up(w, WAIT_ERROR);
}

/*
 * An attempt (or a --fair waiter's subscription) failed with f. If the
 * wait goes on and f is weather (failure_retry), back off and return
 * RIDE_ON: try again (on the same connection when the failure was an
 * answer, BUSY or LOADING; the next attempt reconnects one that
 * dropped). Else the wait's end: a signal, the wait run out while Redis
 * did not answer (ran_out), or a failure no retry can change.
 * A retry that reaches Redis joins the --fair queue again, at our old
 * place where the queue survived (the place is kept by our :w key and
 * the token, and a new subscription).
 */
static int
weather(struct waiter *w, const struct failure *f)
{
	int64_t now = mono_ms(), until;
	char d[32];

	/* Told to stop (the try may have been cut short by it). */
	if (stop_signal(w))
		return give_up(w, WAIT_SIGNAL);
	if (w->no_time)
		return ran_out(w);
	w->res->fail = *f;
	/* A run without --timeout rides out weather once it has reached
	 * Redis: until then its failure is most likely the user's. */
	if (w->wait_ms == 0 || (w->wait_ms < 0 && !w->res->answered) ||
	    !failure_retry(f))
		return give_up(w, WAIT_ERROR);
	if (w->down_since == 0) {
		w->down_since = w->tried_at;
		w->backoffs = 0;
		if (w->deadline == INT64_MAX)
			snprintf(d, sizeof(d), "for ever");
		else
			dur_format(w->deadline - now, d, sizeof(d));
		waitline_clear(&w->line);
		if (now < w->deadline)
			msg_verbose("Redis does not answer as it should "
			    "(%s); waiting on (%s left), trying again at "
			    "most %dms apart", f->why, d,
			    RETRY_BACKOFF_MAX_MS);
	}
	if (now >= w->deadline)
		return ran_out(w);
	until = min64(now + retry_backoff_ms(w->backoffs++), w->deadline);
	if (block_quiet(w, until) == WOKE_SIGNAL)
		return give_up(w, WAIT_SIGNAL);
	return RIDE_ON;
}

enum wait_status
wait_lock(struct lock *l, const struct lock_ctx *ctx, int64_t wait_ms,
    int64_t since, int sigfd, struct wait_result *res,
    const struct wait_hooks *hooks)
{
	struct waiter w = { .l = l, .ctx = ctx, .sigfd = sigfd,
	    .no_ttl_backoff = 100, .res = res };
	int idle_done = 0;
	struct lock_busy busy = { 0 };
	enum lock_result lr;
	/* Not queued yet: a --fair waiter joins once subscribed, below. */
	int why = WOKE_MESSAGE, queue = 0, st;

	w.deadline = wait_ms < 0 ? INT64_MAX : since + wait_ms;
	w.wait_ms = wait_ms;
	lock_timeouts(l, &w.con0, &w.cmd0);
	w.bound = wait_ms < 0 ? INT64_MAX : wait_ms == 0 ?
	    since + lock_connect_timeout(l) : w.deadline + LAST_TRY_MS;
	w.caps = lock_caps(l);
	memset(res, 0, sizeof(*res));
	waitline_init(&w.line, ctx->key, ctx->limit, since);
	w.line.on = w.line.on && wait_ms != 0;
	/* The run's first connect met weather: that was the first try. */
	if (!lock_is_open(l) && lock_failure(l)->status != 0) {
		w.tried_at = since;
		if ((st = weather(&w, lock_failure(l))) != RIDE_ON)
			return st;
	}
	for (;;) {
		lr = attempt(&w, queue, res, &busy);
		if (lr == LOCK_GRANTED)
			return granted(&w, since, why);
		if (lr == LOCK_ERROR) {
			if ((st = weather(&w, lock_failure(l))) != RIDE_ON)
				return st;
			if (w.wk == NULL)
				continue;
		} else {
			back_up(&w, &busy);
			/* -n's one answer, or --timeout's last: KEY is held. */
			if (mono_ms() >= w.deadline) {
				res->busy = busy;
				return give_up(&w, WAIT_TIMEOUT);
			}
		}
		if (w.wk == NULL)
			w.wk = lock_waker(l, ctx, waitline_on(&w.line) ||
			    msg_level >= MSG_VERBOSE);
		/* Subscriptions that dropped are made again (a BLPOP needs
		 * none); once listening, a release from now on reaches us,
		 * and one from before is seen by the next attempt, which
		 * (re)joins a --fair queue: as one back from weather, if we
		 * were queued, so that a server that changed under the queue
		 * is noticed before anyone is passed over (queue.lua). */
		if (!waker_listening(w.wk) || w.down_since != 0) {
			(void)waker_listen(w.wk);
			while (ctx->fair && !waker_listening(w.wk)) {
				st = weather(&w, waker_failure(w.wk));
				if (st != RIDE_ON)
					return st;
				(void)waker_listen(w.wk);
			}
			queue = !ctx->fair ? 0 : w.queued ? LOCK_REJOIN :
			    LOCK_JOIN;
			why = WOKE_MESSAGE;
			continue;
		}
		waitline_update(&w.line, &busy);
		if (!idle_done && hooks->idle != NULL)
			hooks->idle(hooks->arg, l, ctx);
		idle_done = 1;
		do
			why = sleep_until(&w, retry_at(&w, &busy));
		while (why == WOKE_TIMEOUT && still_foreign(&w, &busy));
		if (why == WOKE_SIGNAL)
			return give_up(&w, WAIT_SIGNAL);
		if (why == WOKE_LOST)
			msg_verbose("wake-up connection lost (%s); "
			    "reconnecting", waker_failure(w.wk)->why);
		/* Without a subscription this attempt must not queue us. */
		queue = ctx->fair && waker_listening(w.wk) ? LOCK_JOIN : 0;
	}
}

int64_t
wait_try_ms(int64_t wait_ms, int64_t connect_ms)
{
	return min64(wait_ms + LAST_TRY_MS, connect_ms);
}

int
wait_first_weather(int64_t wait_ms, const struct failure *f)
{
	return wait_ms > 0 && f->kind != FAIL_UNREACHABLE &&
	    f->kind != FAIL_TLS && failure_retry(f);
}
