/* SPDX-License-Identifier: MIT */
/*
 * The renewal thread: extends the lease every lease/3 on its own
 * connection, reconnecting and retrying on errors, and tells the main
 * thread through a pipe when Redis says the lock is no longer ours. It
 * never exits the process and never decides what to do about a loss.
 */
#ifndef RLOCK_RENEW_H
#define RLOCK_RENEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conn.h"
#include "lock.h"

struct renewer {
	pthread_t thread;
	struct conn *cn;		/* the thread's until renew_stop */
	const struct lock_ctx *ctx;
	int stop_pipe[2];
	int event_pipe[2];		/* read end: renew_event_fd */
	_Atomic int64_t last_ok;	/* mono ms: start of the last good extend */
	_Atomic int not_ours;		/* Redis said: someone else's lock */
	int running;
};

/*
 * Start renewing ctx's lease on cn (which the thread owns until
 * renew_stop), counting from granted_at. Returns 0 or -1 (errno).
 */
int renew_start(struct renewer *rw, struct conn *cn,
    const struct lock_ctx *ctx, int64_t granted_at);

/* Stop and join the thread; cn is the caller's again. Idempotent. */
void renew_stop(struct renewer *rw);

/* Readable when the renewal state changed (a byte to drain). */
int renew_event_fd(const struct renewer *rw);

#endif
