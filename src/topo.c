// SPDX-License-Identifier: MIT
/*
 * Which node to talk to, for the URLs that name more than one:
 *
 * Sentinel: ask the sentinels (in turn, starting with the one that
 * answered last) for NAME's master, connect, and check ROLE says master:
 * right after a failover a sentinel may still name the old one, and the
 * old master stays writable for seconds (REDIS-NOTES section 4), so a
 * mere answer is not enough. Every reconnect asks again; conn_recheck
 * lets the renewal thread and waiters notice a switch without a
 * reconnect.
 *
 * Cluster: no slot map. Every key of one lock is in one slot, so the
 * node for it is learnt from the first MOVED and kept in the conn; when
 * that node stops answering, the seeds are asked again and MOVED points
 * the way. ASK (a slot in migration) is one ASKING + command on the
 * target, and TRYAGAIN (keys split mid-migration) a short pause.
 */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exitcode.h"
#include "util.h"

#define ROLE_RETRY_MS 100

static void
sentinel_drop(struct conn *cn)
{
	if (cn->sentinel) {
		redisFree(cn->sentinel);
		cn->sentinel = NULL;
	}
}

/* AUTH to a sentinel: with its own password, or (when it asks and none
 * was given) the data password, which setups often share. */
static int
sentinel_auth(struct conn *cn, const char *pass)
{
	redisReply *r = redisCommand(cn->sentinel, "AUTH %s", pass);
	int ok = r && r->type == REDIS_REPLY_STATUS;

	if (r && !ok)
		snprintf(cn->err, sizeof(cn->err), "sentinel refused AUTH: "
		    "%.120s", r->str ? r->str : "?");
	freeReplyObject(r);
	return ok ? 0 : -1;
}

static redisReply *
sentinel_query(struct conn *cn)
{
	const struct conn_cfg *cfg = cn->cfg;
	redisReply *r;

	r = redisCommand(cn->sentinel, "SENTINEL get-master-addr-by-name %s",
	    cfg->ep.master_name);
	if (r && r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, "NOAUTH", 6) == 0 && cfg->sentinel_password ==
	    NULL && cfg->password != NULL) {
		freeReplyObject(r);
		if (sentinel_auth(cn, cfg->password) < 0)
			return NULL;
		r = redisCommand(cn->sentinel,
		    "SENTINEL get-master-addr-by-name %s",
		    cfg->ep.master_name);
	}
	return r;
}

static int
sentinel_connect(struct conn *cn, const struct hostport *s, int64_t left)
{
	cn->sentinel = redisConnectWithTimeout(s->host, s->port, tv_of(left));
	if (cn->sentinel == NULL || cn->sentinel->err) {
		snprintf(cn->err, sizeof(cn->err), "sentinel %s:%d: %s",
		    s->host, s->port, cn->sentinel ? cn->sentinel->errstr :
		    "out of memory");
		sentinel_drop(cn);
		return -1;
	}
	redisSetTimeout(cn->sentinel, tv_of(left));
	if (cn->cfg->sentinel_password &&
	    sentinel_auth(cn, cn->cfg->sentinel_password) < 0) {
		sentinel_drop(cn);
		return -1;
	}
	return 0;
}

/*
 * NAME's master according to the first sentinel that knows it: 0 with
 * host/port, or an exit status with cn->err.
 */
static int
sentinel_ask(struct conn *cn, int64_t deadline, char *host, size_t hlen,
    int *port)
{
	const struct endpoint *ep = &cn->cfg->ep;
	int i, idx, unknown = 0, refused = 0;
	int64_t left;
	redisReply *r;

	for (i = 0; i < ep->nseeds; i++) {
		idx = (cn->sentinel_at + i) % ep->nseeds;
		if ((left = deadline - mono_ms()) <= 0)
			break;
		if (i > 0 || cn->sentinel == NULL) {
			sentinel_drop(cn);
			if (sentinel_connect(cn, &ep->seeds[idx], left) < 0) {
				refused += strstr(cn->err, "AUTH") != NULL;
				continue;
			}
		} else {
			redisSetTimeout(cn->sentinel, tv_of(left));
		}
		r = sentinel_query(cn);
		if (r == NULL) {
			if (cn->sentinel && cn->sentinel->err)
				snprintf(cn->err, sizeof(cn->err),
				    "sentinel %s:%d: %s", ep->seeds[idx].host,
				    ep->seeds[idx].port, cn->sentinel->errstr);
			else
				refused++;
			sentinel_drop(cn);
			continue;
		}
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    r->element[1]->type == REDIS_REPLY_STRING) {
			snprintf(host, hlen, "%s", r->element[0]->str);
			*port = atoi(r->element[1]->str);
			freeReplyObject(r);
			cn->sentinel_at = idx;
			return 0;
		}
		if (r->type == REDIS_REPLY_NIL)
			unknown++;
		else
			snprintf(cn->err, sizeof(cn->err), "sentinel %s:%d "
			    "answered: %.120s", ep->seeds[idx].host,
			    ep->seeds[idx].port, r->type == REDIS_REPLY_ERROR ?
			    r->str : "an unexpected reply");
		freeReplyObject(r);
		sentinel_drop(cn);
	}
	if (unknown > 0 && unknown + refused == ep->nseeds) {
		snprintf(cn->err, sizeof(cn->err), "no sentinel knows a master "
		    "named '%.64s'", ep->master_name);
		return cn->status = RL_EXIT_PROTOCOL;
	}
	if (refused > 0 && refused == ep->nseeds)
		return cn->status = RL_EXIT_NOPERM;
	if (cn->err[0] == '\0')
		snprintf(cn->err, sizeof(cn->err), "no sentinel answered in "
		    "time");
	return cn->status = RL_EXIT_UNAVAILABLE;
}

/* 1 if the node we are connected to says it is a master; a user who may
 * not run ROLE is taken at the sentinel's word. */
static int
is_master(struct conn *cn)
{
	const char *argv[1] = { "ROLE" };
	size_t lens[1] = { 4 };
	redisReply *r = conn_command(cn, 1, argv, lens);
	int yes;

	if (r == NULL)
		return 0;
	yes = (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(r->element[0]->str, "master") == 0) ||
	    (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0);
	freeReplyObject(r);
	return yes;
}

static int
open_sentinel(struct conn *cn, int64_t deadline)
{
	int st, port;
	char host[256];

	for (;;) {
		if ((st = sentinel_ask(cn, deadline, host, sizeof(host),
		    &port)) != 0)
			return st;
		conn_set_node(cn, host, port);
		st = conn_connect_node(cn, host, port, deadline);
		if (st == 0) {
			if (is_master(cn))
				return 0;
			conn_close(cn);
			snprintf(cn->err, sizeof(cn->err), "%.100s:%d, named by "
			    "the sentinels as master '%.64s', is not a master "
			    "(a failover in progress?)", host, port,
			    cn->cfg->ep.master_name);
			st = cn->status = RL_EXIT_UNAVAILABLE;
		}
		if (!conn_status_transient(st) ||
		    deadline - mono_ms() <= ROLE_RETRY_MS)
			return st;
		nap_ms(ROLE_RETRY_MS);
	}
}

/* The node that served us last, then every seed: the first that answers
 * is good enough, as MOVED leads on from there. */
static int
open_cluster(struct conn *cn, int64_t deadline)
{
	const struct endpoint *ep = &cn->cfg->ep;
	int i, st = RL_EXIT_UNAVAILABLE;

	if (cn->node_port > 0) {
		st = conn_connect_node(cn, cn->node_host, cn->node_port,
		    deadline);
		if (st == 0 || !conn_status_transient(st))
			return st;
	}
	for (i = 0; i < ep->nseeds && mono_ms() < deadline; i++) {
		st = conn_connect_node(cn, ep->seeds[i].host,
		    ep->seeds[i].port, deadline);
		if (st == 0) {
			conn_set_node(cn, ep->seeds[i].host,
			    ep->seeds[i].port);
			return 0;
		}
		if (!conn_status_transient(st))
			return st;
	}
	return st;
}

int
topo_open(struct conn *cn, int64_t deadline)
{
	switch (cn->cfg->ep.kind) {
	case EP_SENTINEL:
		return open_sentinel(cn, deadline);
	case EP_CLUSTER:
		return open_cluster(cn, deadline);
	default:
		return conn_connect_node(cn, NULL, 0, deadline);
	}
}

int
topo_parse_redirect(const char *err, long *slot, char *host, size_t hlen,
    int *port)
{
	const char *sp, *colon;
	int ask;

	if (strncmp(err, "MOVED ", 6) == 0)
		ask = 0;
	else if (strncmp(err, "ASK ", 4) == 0)
		ask = 1;
	else
		return -1;
	*slot = strtol(err + (ask ? 4 : 6), NULL, 10);
	if ((sp = strchr(err + (ask ? 4 : 6), ' ')) == NULL ||
	    (colon = strrchr(sp, ':')) == NULL || (size_t)(colon - sp - 1) >=
	    hlen)
		return -1;
	memcpy(host, sp + 1, (size_t)(colon - sp - 1));
	host[colon - sp - 1] = '\0';
	*port = atoi(colon + 1);
	if (*port <= 0 || *port > 65535)
		return -1;
	return ask ? TOPO_ASK : TOPO_MOVED;
}

enum topo_redirect
topo_classify(struct conn *cn, const redisReply *r, char *host, size_t hlen,
    int *port)
{
	enum endpoint_kind kind = cn->cfg->ep.kind;
	long slot;
	int t;

	if (r->type != REDIS_REPLY_ERROR || r->str == NULL)
		return TOPO_NONE;
	if (kind == EP_CLUSTER) {
		if (strncmp(r->str, "TRYAGAIN", 8) == 0)
			return TOPO_TRYAGAIN;
		t = topo_parse_redirect(r->str, &slot, host, hlen, port);
		if (t < 0)
			return TOPO_NONE;
		/* "MOVED 12 :7001": a node that does not know its own
		 * address means the one we asked. */
		if (host[0] == '\0')
			snprintf(host, hlen, "%s", cn->node_host);
		return (enum topo_redirect)t;
	}
	if (kind == EP_SENTINEL && (strncmp(r->str, "READONLY", 8) == 0 ||
	    strncmp(r->str, "UNBLOCKED", 9) == 0))
		return TOPO_REMASTER;
	return TOPO_NONE;
}

int
topo_recheck(struct conn *cn)
{
	char host[256];
	int port;

	if (cn->cfg->ep.kind != EP_SENTINEL || cn->node_port == 0)
		return 0;
	if (sentinel_ask(cn, mono_ms() + cn->cmd_timeout_ms, host,
	    sizeof(host), &port) != 0)
		return 0;
	if (port == cn->node_port && strcmp(host, cn->node_host) == 0)
		return 0;
	msg_verbose("the sentinels name %s:%d as master '%s' now (was "
	    "%s:%d)", host, port, cn->cfg->ep.master_name, cn->node_host,
	    cn->node_port);
	conn_close(cn);
	conn_set_node(cn, host, port);
	return 1;
}

int
topo_masters(struct conn *cn, struct hostport **out)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	size_t lens[2] = { 7, 5 }, i;
	const redisReply *m;
	redisReply *r;
	int n = 0, j;

	*out = NULL;
	if ((r = conn_command(cn, 2, argv, lens)) == NULL)
		return -1;
	if (r->type != REDIS_REPLY_ARRAY) {
		conn_fail_reply(cn, "CLUSTER SLOTS", r);
		freeReplyObject(r);
		return -1;
	}
	*out = xcalloc(r->elements + 1, sizeof(**out));
	for (i = 0; i < r->elements; i++) {
		/* {first slot, last slot, {host, port, id...}, replicas...} */
		if (r->element[i]->type != REDIS_REPLY_ARRAY ||
		    r->element[i]->elements < 3 ||
		    (m = r->element[i]->element[2])->type !=
		    REDIS_REPLY_ARRAY || m->elements < 2 ||
		    m->element[0]->type != REDIS_REPLY_STRING ||
		    m->element[1]->type != REDIS_REPLY_INTEGER)
			continue;
		for (j = 0; j < n; j++)
			if ((*out)[j].port == m->element[1]->integer &&
			    strcmp((*out)[j].host, m->element[0]->str) == 0)
				break;
		if (j < n)
			continue;
		(*out)[n].host = xstrdup(m->element[0]->str[0] ?
		    m->element[0]->str : cn->node_host);
		(*out)[n++].port = (int)m->element[1]->integer;
	}
	freeReplyObject(r);
	return n;
}

void
topo_close(struct conn *cn)
{
	sentinel_drop(cn);
}
