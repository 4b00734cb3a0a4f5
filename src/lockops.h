/* SPDX-License-Identifier: MIT */
/*
 * What a lock implementation provides (one server: single.c; a Redlock
 * quorum of them: quorum.c): the ops table and the part of struct lock
 * every implementation starts with. For lock.c and the implementations
 * only (tests/check-layers); everyone else goes through lock.h.
 */
#ifndef RLOCK_LOCKOPS_H
#define RLOCK_LOCKOPS_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "lockres.h"
#include "mode.h"
#include "reply.h"

struct lock;
struct lock_cfg;
struct lock_node;
struct waker;

/* Every operation leaves its failure in struct lock's `fail`; see
 * lock.h for what each one means. Those a lock has no use for may be
 * NULL (lock.c answers for them): heartbeat, dequeue, look_foreign,
 * recheck and caps 0, watch_fd -1. */
struct lock_ops {
	int (*open)(struct lock *l);
	void (*close)(struct lock *l);
	int (*is_open)(const struct lock *l);
	void (*set_timeouts)(struct lock *l, int64_t connect_ms,
	    int64_t cmd_ms);
	int (*acquire_start)(struct lock *l, const struct lock_ctx *ctx,
	    int queue, int want_holder);
	enum lock_result (*acquire_finish)(struct lock *l,
	    const struct lock_ctx *ctx, int64_t *fence,
	    struct lock_busy *busy);
	int (*acquire_pending)(struct lock *l, int64_t *sent_at);
	int (*extend)(struct lock *l, const struct lock_ctx *ctx);
	int (*release)(struct lock *l, const struct lock_ctx *ctx);
	int (*record)(struct lock *l, const struct lock_ctx *ctx,
	    const struct run_end *end, int64_t fence);
	int (*is_ours)(struct lock *l, const struct lock_ctx *ctx);
	int (*heartbeat)(struct lock *l, const struct lock_ctx *ctx);
	int (*dequeue)(struct lock *l, const struct lock_ctx *ctx);
	void (*describe_holder)(struct lock *l, const struct lock_ctx *ctx,
	    char *buf, size_t len);
	struct waker *(*waker)(struct lock *l, const struct lock_ctx *ctx,
	    int want_holder);
	int (*caps)(const struct lock *l);
	int (*look_foreign)(struct lock *l, const struct lock_ctx *ctx);
	int (*recheck)(struct lock *l);
	int (*watch_fd)(const struct lock *l);
	void (*free)(struct lock *l);
};

/* The part every implementation starts with. */
struct lock {
	const struct lock_ops *ops;
	const struct lock_cfg *cfg;	/* what lock_new was given */
	int64_t connect_ms;		/* the budget of a reconnect */
	int64_t cmd_ms;			/* a reply's (each master's), at most */
	const struct failure *fail;	/* why the last op failed */
	int n;				/* its servers (lock_node) */
	struct lock_node *node[REDLOCK_MAX];
};

#endif
