// SPDX-License-Identifier: MIT
/* The lock interface: picks the implementation, then dispatches to it. */
#include "lock.h"

#include <stdlib.h>
#include <string.h>

#include "quorum.h"
#include "single.h"
#include "util.h"

struct lock *
lock_new(const struct lock_cfg *cfg)
{
	struct lock *l;

	if (cfg->redlock)
		l = quorum_new(cfg->servers, cfg->n, cfg->connect_timeout_ms,
		    cfg->master_timeout_ms);
	else
		l = single_new(&cfg->servers[0], cfg->connect_timeout_ms,
		    cfg->connect_timeout_ms);
	l->cfg = cfg;
	return l;
}

struct lock *
lock_new_like(const struct lock *l)
{
	return lock_new(l->cfg);
}

void
lock_cfg_free(struct lock_cfg *cfg)
{
	int i;

	for (i = 0; i < cfg->n; i++)
		url_free(&cfg->servers[i].ep);
	free(cfg->servers);
	memset(cfg, 0, sizeof(*cfg));
}

void
lock_free(struct lock *l)
{
	if (l != NULL)
		l->ops->free(l);
}

int
lock_open(struct lock *l)
{
	return l->ops->open(l);
}

int
lock_open_first(struct lock *l)
{
	int i, n = lock_servers(l);

	for (i = 0; i < n; i++)
		server_open_how(lock_server(l, i), CONN_LOGIN_AHEAD);
	return lock_open(l);
}

int
lock_reopen(struct lock *l)
{
	if (l->ops->servers(l) == 1)
		l->ops->close(l);
	return l->ops->open(l);
}

void
lock_close(struct lock *l)
{
	l->ops->close(l);
}

int
lock_is_open(const struct lock *l)
{
	return l->ops->is_open(l);
}

void
lock_set_timeouts(struct lock *l, int64_t connect_ms, int64_t cmd_ms)
{
	l->ops->set_timeouts(l, connect_ms, cmd_ms);
}

int64_t
lock_connect_timeout(const struct lock *l)
{
	return l->user_connect_ms;
}

enum lock_result
lock_acquire(struct lock *l, const struct lock_ctx *ctx, int queue,
    int want_holder, int64_t *fence, struct lock_busy *busy)
{
	return l->ops->acquire(l, ctx, queue, want_holder, fence, busy);
}

int
lock_acquire_send(struct lock *l, const struct lock_ctx *ctx, int want_holder)
{
	if (l->cfg->redlock)
		return -1;
	return single_send(l, SINGLE_ACQUIRE, ctx, want_holder);
}

enum lock_result
lock_acquire_recv(struct lock *l, const struct lock_ctx *ctx, int want_holder,
    int64_t *fence, struct lock_busy *busy)
{
	int64_t by = mono_ms() + server_cmd_timeout(lock_server(l, 0));

	if (l->cfg->redlock)
		return LOCK_ERROR;
	return single_recv_acquire(l, ctx, want_holder, by, fence, busy);
}

int
lock_extend(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->extend(l, ctx);
}

int
lock_release(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->release(l, ctx);
}

int
lock_record(struct lock *l, const struct lock_ctx *ctx,
    const struct run_end *end, int64_t fence)
{
	return l->ops->record(l, ctx, end, fence);
}

int
lock_is_ours(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->is_ours(l, ctx);
}

int
lock_heartbeat(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->heartbeat(l, ctx);
}

int
lock_dequeue(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->dequeue(l, ctx);
}

void
lock_describe_holder(struct lock *l, const struct lock_ctx *ctx, char *buf,
    size_t len)
{
	l->ops->describe_holder(l, ctx, buf, len);
}

struct waker *
lock_waker(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->waker(l, ctx);
}

int
lock_recheck(struct lock *l)
{
	return l->ops->recheck(l);
}

int
lock_watch_fd(const struct lock *l)
{
	return l->ops->watch_fd(l);
}

int
lock_servers(const struct lock *l)
{
	return l->ops->servers(l);
}

struct server *
lock_server(struct lock *l, int i)
{
	return l->ops->server(l, i);
}

int
lock_majority(const struct lock *l)
{
	return l->ops->servers(l) / 2 + 1;
}

const struct failure *
lock_failure(const struct lock *l)
{
	return l->ops->failure(l);
}
