// SPDX-License-Identifier: MIT
/*
 * The lock interface: picks the implementation, then dispatches to it;
 * and a lock_node, one server behind it, for the operator's views.
 */
#include "lock.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "quorum.h"
#include "script.h"
#include "server.h"
#include "single.h"
#include "util.h"
#include "wake.h"

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
lock_reopen(struct lock *l)
{
	if (l->n == 1)
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
	l->connect_ms = connect_ms;
	l->ops->set_timeouts(l, connect_ms, cmd_ms);
}

int64_t
lock_connect_timeout(const struct lock *l)
{
	return l->cfg->connect_timeout_ms;
}

enum lock_result
lock_acquire(struct lock *l, const struct lock_ctx *ctx, int queue,
    int want_holder, int64_t *fence, struct lock_busy *busy)
{
	if (l->ops->acquire_start(l, ctx, queue, want_holder) < 0)
		return LOCK_ERROR;
	return l->ops->acquire_finish(l, ctx, fence, busy);
}

enum lock_result
lock_acquire_finish(struct lock *l, const struct lock_ctx *ctx, int64_t *fence,
    struct lock_busy *busy)
{
	return l->ops->acquire_finish(l, ctx, fence, busy);
}

int
lock_acquire_pending(struct lock *l, int64_t *sent_at)
{
	return l->ops->acquire_pending(l, sent_at);
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
	return l->ops->heartbeat ? l->ops->heartbeat(l, ctx) : 0;
}

int
lock_dequeue(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->dequeue ? l->ops->dequeue(l, ctx) : 0;
}

void
lock_describe_holder(struct lock *l, const struct lock_ctx *ctx, char *buf,
    size_t len)
{
	l->ops->describe_holder(l, ctx, buf, len);
}

struct waker *
lock_waker(struct lock *l, const struct lock_ctx *ctx, int want_holder)
{
	return l->ops->waker(l, ctx, want_holder);
}

int
lock_caps(const struct lock *l)
{
	return l->ops->caps ? l->ops->caps(l) : 0;
}

int
lock_look_foreign(struct lock *l, const struct lock_ctx *ctx)
{
	return l->ops->look_foreign ? l->ops->look_foreign(l, ctx) : 0;
}

void
lock_timeouts(const struct lock *l, int64_t *connect_ms, int64_t *cmd_ms)
{
	*connect_ms = l->connect_ms;
	*cmd_ms = l->cmd_ms;
}

/* A name CLIENT LIST shows for a holder's listening connection, so that
 * an operator (and the tests) can tell it from a waiter blocked in BLPOP;
 * a user that may not name it leaves it unnamed. */
#define LISTENER_NAME "rlock-holder"

struct waker *
lock_listener(struct lock *l, const struct lock_ctx *ctx)
{
	const char *argv[3] = { "CLIENT", "SETNAME", LISTENER_NAME };
	size_t lens[3] = { 6, 7, sizeof(LISTENER_NAME) - 1 };
	struct server *s[REDLOCK_MAX];
	int i, n = l->n;

	for (i = 0; i < n; i++)
		if (server_is_open(s[i] = l->node[i]->srv))
			reply_free(server_command(s[i], 3, argv, lens));
	return wake_pop_any(s, n, 1, ctx->k.broken, ctx->k.broken_len);
}

int
lock_recheck(struct lock *l)
{
	return l->ops->recheck ? l->ops->recheck(l) : 0;
}

int
lock_watch_fd(const struct lock *l)
{
	return l->ops->watch_fd ? l->ops->watch_fd(l) : -1;
}

int
lock_majority(const struct lock *l)
{
	return l->n / 2 + 1;
}

const struct failure *
lock_failure(const struct lock *l)
{
	return l->fail;
}

int
lock_nodes(const struct lock *l)
{
	return l->n;
}

struct lock_node *
lock_node(struct lock *l, int i)
{
	return l->node[i];
}

int
lock_node_is_open(const struct lock_node *n)
{
	return server_is_open(n->srv);
}

const struct failure *
lock_node_failure(const struct lock_node *n)
{
	return server_failure(n->srv);
}

void
lock_node_name(const struct lock_node *n, char *buf, size_t len)
{
	url_redacted(&server_cfg(n->srv)->ep, buf, len);
}

struct reply *
lock_node_command(struct lock_node *n, int argc, const char **argv,
    const size_t *lens)
{
	return server_command(n->srv, argc, argv, lens);
}

struct reply *
lock_node_script(struct lock_node *n, const struct script_args *a)
{
	return script_call(n->srv, a);
}

struct reply *
lock_node_script_ro(struct lock_node *n, const struct script_args *a)
{
	return script_call_ro(n->srv, a);
}

int
lock_node_fail_reply(struct lock_node *n, const char *what,
    const struct reply *r)
{
	return server_fail_reply(n->srv, what, r);
}

/* A Cluster spreads the keys over its masters: each one, on a server of
 * its own for the call. */
int
lock_node_each_master(struct lock_node *n,
    int (*fn)(struct lock_node *m, void *arg), void *arg)
{
	int64_t t = server_connect_timeout(n->srv);
	struct lock_node m;
	struct hostport *hp;
	int i, k, st = 0;

	if (server_cfg(n->srv)->ep.kind != EP_CLUSTER)
		return fn(n, arg);
	if ((k = server_masters(n->srv, &hp)) < 0)
		return -1;
	for (i = 0; i < k; i++) {
		m.srv = server_clone(n->srv, t, t);
		if (st == 0 && (server_open_node(m.srv, hp[i].host,
		    hp[i].port) != 0 || fn(&m, arg) < 0)) {
			*server_failure_rw(n->srv) = *server_failure(m.srv);
			st = -1;
		}
		server_free(m.srv);
		free(hp[i].host);
	}
	free(hp);
	return st;
}

int
lock_node_ask_ahead(struct lock_node *n, int argc, const char **argv,
    const size_t *lens, void (*fn)(void *arg, const struct reply *r),
    void *arg)
{
	struct conn_req rq = { .argc = argc, .argv = argv, .lens = lens,
	    .done = fn, .ctx = arg };

	return server_queue(n->srv, &rq);
}

const char *
lock_protocol_library(void)
{
	return conn_library();
}
