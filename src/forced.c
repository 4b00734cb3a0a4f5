// SPDX-License-Identifier: MIT
/*
 * The listener for a forced release (forced.h). Each BLPOP lasts
 * LISTEN_SPAN_MS, short of the idle timeouts proxies keep, so a quiet
 * holding is not taken for a dead connection. An element is only a hint
 * (one may be left from a release that broke an earlier holder): what
 * counts is Redis's answer to "is it ours?", asked on the same
 * connection. A connection that fails (a restart, a refused BLPOP: a user
 * made without +blpop) is tried again after a pause that doubles up to
 * RETRY_MAX_MS, so a refusal costs Redis one command in that long.
 */
#include "forced.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "sig.h"
#include "util.h"

#define LISTEN_SPAN_MS 10000
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 30000

/* Sleep ms, or until told to stop: 1 stop, 0 slept. */
static int
pause_ms(struct forced *f, int64_t ms)
{
	struct pollfd p = { .fd = f->stop_pipe[0], .events = POLLIN };
	int64_t until = mono_ms() + ms, left;

	while ((left = until - mono_ms()) > 0)
		if (poll(&p, 1, (int)left) > 0)
			return 1;
	return 0;
}

static void *
listen_loop(void *arg)
{
	struct forced *f = arg;
	struct waker *w = NULL;
	int64_t retry = RETRY_FIRST_MS;
	enum woke r;
	char b = 1;

	for (;;) {
		/* A connection that went is opened again where the last
		 * redirect pointed (a Cluster slot's new owner). */
		if (!lock_is_open(f->l)) {
			if (lock_open(f->l) != 0)
				goto again;
			/* A new connection is named anew. */
			waker_free(w);
			w = NULL;
		}
		if (w == NULL)
			w = lock_listener(f->l, f->ctx);
		r = waker_wait(w, mono_ms() + LISTEN_SPAN_MS, f->stop_pipe[0]);
		if (r == WOKE_SIGFD)
			break;
		if (r == WOKE_TIMEOUT || r == WOKE_MESSAGE)
			retry = RETRY_FIRST_MS;
		if (r == WOKE_TIMEOUT)
			continue;
		if (r == WOKE_MESSAGE && lock_is_ours(f->l, f->ctx) == 0) {
			msg_verbose("Redis says the lock is no longer ours "
			    "(release --force?)");
			atomic_store(&f->heard, 1);
			(void)!write(f->event_pipe[1], &b, 1);
			break;
		}
		if (r == WOKE_MESSAGE)
			continue;
		waker_cancel(w);
again:
		/* Lost, or refused: start afresh after a pause. */
		if (pause_ms(f, retry))
			break;
		retry = retry * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry * 2;
	}
	waker_free(w);
	lock_close(f->l);
	return NULL;
}

int
forced_start(struct forced *f, const struct lock *like,
    const struct lock_ctx *ctx)
{
	int e;

	memset(f, 0, sizeof(*f));
	if (thread_pipes_open(f->stop_pipe, f->event_pipe) < 0)
		return -1;
	f->l = lock_new_like(like);
	f->ctx = ctx;
	if ((e = sig_thread_create(&f->thread, listen_loop, f)) != 0) {
		lock_free(f->l);
		f->l = NULL;
		thread_pipes_close(f->stop_pipe, f->event_pipe);
		errno = e;
		return -1;
	}
	f->running = 1;
	return 0;
}

int
forced_fd(const struct forced *f)
{
	return f->running ? f->event_pipe[0] : -1;
}

int
forced_heard(const struct forced *f)
{
	return atomic_load(&f->heard);
}

void
forced_stop(struct forced *f)
{
	char b = 1;

	if (!f->running)
		return;
	(void)!write(f->stop_pipe[1], &b, 1);
	pthread_join(f->thread, NULL);
	f->running = 0;
	lock_free(f->l);
	f->l = NULL;
	thread_pipes_close(f->stop_pipe, f->event_pipe);
}
