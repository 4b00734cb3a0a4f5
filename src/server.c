// SPDX-License-Identifier: MIT
/*
 * Which node to talk to, for the URLs that name more than one:
 *
 * Sentinel: ask the sentinels (in turn, starting with the one that
 * answered last) for NAME's master, connect, and check ROLE says master:
 * right after a failover a sentinel may still name the old one, and the
 * old master stays writable for seconds after it was demoted, so a
 * mere answer is not enough. Every reconnect asks again; server_recheck
 * lets the renewal thread and waiters notice a switch without a
 * reconnect.
 *
 * Cluster: no slot map. Every key of one lock is in one slot, so the
 * node for it is learnt from the first MOVED and kept; when that node
 * stops answering, the seeds are asked again and MOVED points the way.
 * ASK (a slot in migration) is one ASKING + command on the target, and
 * TRYAGAIN (keys split mid-migration) a short pause.
 */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "sig.h"
#include "util.h"

/* Redirects followed for one command before its reply is returned. */
#define MAX_HOPS 5
#define TRYAGAIN_PAUSE_MS 20
#define ROLE_RETRY_MS 100

enum redirect { GO_NOWHERE, GO_MOVED, GO_ASK, GO_TRYAGAIN, GO_REMASTER };

struct server {
	const struct conn_cfg *cfg;
	struct conn *cn;		/* to the node */
	int64_t connect_ms;
	/* Sentinel and Cluster: the node we talk to; 0: not known yet. */
	char node_host[256];
	int node_port;
	struct conn_cfg sentinel_cfg;	/* ep.host set per sentinel */
	struct conn *sentinel;		/* kept open for the re-checks */
	int sentinel_at;		/* the seed that answered last */
	struct failure fail;
};

struct server *
server_new(const struct conn_cfg *cfg, int64_t connect_ms, int64_t cmd_ms)
{
	struct server *s = xcalloc(1, sizeof(*s));

	s->cfg = cfg;
	s->connect_ms = connect_ms;
	s->cn = conn_new(cfg, cmd_ms);
	s->sentinel_cfg.ep.kind = EP_TCP;
	/* rediss+sentinel://: the sentinels over TLS too. */
	s->sentinel_cfg.ep.tls = cfg->ep.tls;
	s->sentinel_cfg.password = cfg->sentinel_password;
	s->sentinel_cfg.connect_timeout_ms = cfg->connect_timeout_ms;
	return s;
}

static void
set_node(struct server *s, const char *host, int port)
{
	snprintf(s->node_host, sizeof(s->node_host), "%s", host);
	s->node_port = port;
}

struct server *
server_clone(const struct server *src, int64_t connect_ms, int64_t cmd_ms)
{
	struct server *s = server_new(src->cfg, connect_ms, cmd_ms);

	set_node(s, src->node_host, src->node_port);
	s->sentinel_at = src->sentinel_at;
	return s;
}

static void
sentinel_drop(struct server *s)
{
	conn_free(s->sentinel);
	s->sentinel = NULL;
}

void
server_close(struct server *s)
{
	sentinel_drop(s);
	conn_close(s->cn);
}

void
server_free(struct server *s)
{
	if (s == NULL)
		return;
	server_close(s);
	conn_free(s->cn);
	free(s);
}

int
server_is_open(const struct server *s)
{
	return conn_is_open(s->cn);
}

void
server_set_timeouts(struct server *s, int64_t connect_ms, int64_t cmd_ms)
{
	s->connect_ms = connect_ms;
	conn_set_timeout(s->cn, cmd_ms);
}

int64_t
server_connect_timeout(const struct server *s)
{
	return s->connect_ms;
}

const struct conn_cfg *
server_cfg(const struct server *s)
{
	return s->cfg;
}

const struct failure *
server_failure(const struct server *s)
{
	return &s->fail;
}

struct failure *
server_failure_rw(struct server *s)
{
	return &s->fail;
}

int
server_fail_reply(struct server *s, const char *what, const struct reply *r)
{
	return failure_from_reply(&s->fail, what, r);
}

/* The node connection failed: its failure is ours. */
static int
from_conn(struct server *s)
{
	s->fail = *conn_failure(s->cn);
	return s->fail.status;
}

/* conn_connect on the node connection: 0, or its status, recorded. */
static int
connect_node(struct server *s, const char *host, int port, int64_t deadline)
{
	return conn_connect(s->cn, host, port, deadline) ? from_conn(s) : 0;
}

/* ------------------------------------------------------------ Sentinel */

/* SENTINEL get-master-addr-by-name NAME; a sentinel that asks for a
 * password when none of its own was given gets the data password, which
 * setups often share. */
static struct reply *
sentinel_query(struct server *s)
{
	const char *name = s->cfg->ep.master_name;
	const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", name };
	size_t lens[3] = { 8, 23, strlen(name) };
	const char *auth[2] = { "AUTH", s->cfg->password };
	size_t alen[2] = { 4, 0 };
	struct reply *r;

	r = conn_command(s->sentinel, 3, argv, lens);
	if (r && r->type == REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0 &&
	    s->cfg->sentinel_password == NULL && s->cfg->password != NULL) {
		reply_free(r);
		alen[1] = strlen(s->cfg->password);
		if ((r = conn_command(s->sentinel, 2, auth, alen)) == NULL)
			return NULL;
		if (r->type != REPLY_STATUS) {
			failure_set(&s->fail, RL_EXIT_NOPERM, "sentinel "
			    "refused AUTH: %.120s", r->str ? r->str : "?");
			reply_free(r);
			return NULL;
		}
		reply_free(r);
		r = conn_command(s->sentinel, 3, argv, lens);
	}
	return r;
}

/* {host, port} from a sentinel; 0, or -1 if r is not that. */
static int
master_addr(const struct reply *r, char *host, size_t hlen, int *port)
{
	long long p;

	if (r->type != REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REPLY_STRING ||
	    r->element[1]->type != REPLY_STRING ||
	    int_parse(r->element[1]->str, 1, 65535, &p) < 0)
		return -1;
	snprintf(host, hlen, "%s", r->element[0]->str);
	*port = (int)p;
	return 0;
}

/* One sentinel's answer: 0 found, 1 it does not know NAME, -1 failed
 * (recorded; status 77 if it refused us). Kept open only when found. */
static int
ask_sentinel(struct server *s, const struct hostport *hp, int64_t left,
    char *host, size_t hlen, int *port)
{
	struct reply *r;
	int st = 0;

	failure_clear(&s->fail);
	if (s->sentinel == NULL) {
		s->sentinel = conn_new(&s->sentinel_cfg, left);
		st = conn_connect(s->sentinel, hp->host, hp->port,
		    mono_ms() + left);
	}
	conn_set_timeout(s->sentinel, left);
	if (st != 0 || (r = sentinel_query(s)) == NULL) {
		/* The connection's failure, unless the query recorded
		 * its own (a refused AUTH). */
		if (s->fail.status == 0)
			failure_set(&s->fail, st ? st : RL_EXIT_UNAVAILABLE,
			    "sentinel %s:%d: %s", hp->host, hp->port,
			    conn_failure(s->sentinel)->why);
		return -1;
	}
	st = master_addr(r, host, hlen, port);
	if (st < 0 && r->type == REPLY_NIL) {
		st = 1;
	} else if (st < 0) {
		failure_set(&s->fail, r->type == REPLY_ERROR && reply_status(r)
		    == RL_EXIT_NOPERM ? RL_EXIT_NOPERM : RL_EXIT_UNAVAILABLE,
		    "sentinel %s:%d answered: %.120s", hp->host, hp->port,
		    r->type == REPLY_ERROR ? r->str : "an unexpected reply");
	}
	reply_free(r);
	return st;
}

/*
 * NAME's master according to the first sentinel that knows it: 0 with
 * host/port, or an exit status with the failure recorded.
 */
static int
sentinel_ask(struct server *s, int64_t deadline, char *host, size_t hlen,
    int *port)
{
	const struct endpoint *ep = &s->cfg->ep;
	int i, idx, r, unknown = 0, refused = 0;
	int64_t left;

	failure_clear(&s->fail);
	for (i = 0; i < ep->nseeds; i++) {
		idx = (s->sentinel_at + i) % ep->nseeds;
		if ((left = deadline - mono_ms()) <= 0)
			break;
		r = ask_sentinel(s, &ep->seeds[idx], left, host, hlen, port);
		if (r == 0) {
			s->sentinel_at = idx;
			return 0;
		}
		sentinel_drop(s);
		unknown += r == 1;
		refused += r < 0 && s->fail.status == RL_EXIT_NOPERM;
	}
	if (unknown > 0 && unknown + refused == ep->nseeds)
		failure_set(&s->fail, RL_EXIT_PROTOCOL, "no sentinel knows a "
		    "master named '%.64s'", ep->master_name);
	else if (refused > 0 && refused == ep->nseeds)
		s->fail.status = RL_EXIT_NOPERM;
	else if (s->fail.why[0] == '\0')
		failure_set(&s->fail, RL_EXIT_UNAVAILABLE, "no sentinel "
		    "answered in time");
	else
		s->fail.status = RL_EXIT_UNAVAILABLE;
	return s->fail.status;
}

/* 1 if the node we are connected to says it is a master; a user who may
 * not run ROLE is taken at the sentinel's word. */
static int
is_master(struct server *s)
{
	const char *argv[1] = { "ROLE" };
	size_t lens[1] = { 4 };
	struct reply *r = conn_command(s->cn, 1, argv, lens);
	int yes;

	if (r == NULL)
		return 0;
	yes = (r->type == REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REPLY_STRING &&
	    strcmp(r->element[0]->str, "master") == 0) ||
	    (r->type == REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0);
	reply_free(r);
	return yes;
}

static int
open_sentinel(struct server *s, int64_t deadline)
{
	int st, port;
	char host[256];

	for (;;) {
		if ((st = sentinel_ask(s, deadline, host, sizeof(host),
		    &port)) != 0)
			return st;
		set_node(s, host, port);
		if ((st = connect_node(s, host, port, deadline)) == 0 &&
		    is_master(s))
			return 0;
		if (st == 0) {
			conn_close(s->cn);
			failure_set(&s->fail, RL_EXIT_UNAVAILABLE, "%.100s:%d, "
			    "named by the sentinels as master '%.64s', is not "
			    "a master (a failover in progress?)", host, port,
			    s->cfg->ep.master_name);
			st = RL_EXIT_UNAVAILABLE;
		}
		if (!failure_transient(st) || sig_stopping() ||
		    deadline - mono_ms() <= ROLE_RETRY_MS)
			return st;
		nap_ms(ROLE_RETRY_MS);
	}
}

int
server_recheck(struct server *s)
{
	struct failure keep = s->fail;
	char host[256];
	int port, st;

	if (s->cfg->ep.kind != EP_SENTINEL || s->node_port == 0)
		return 0;
	st = sentinel_ask(s, mono_ms() + conn_timeout(s->cn), host,
	    sizeof(host), &port);
	s->fail = keep;
	if (st != 0 || (port == s->node_port && strcmp(host,
	    s->node_host) == 0))
		return 0;
	msg_verbose("the sentinels name %s:%d as master '%s' now (was "
	    "%s:%d)", host, port, s->cfg->ep.master_name, s->node_host,
	    s->node_port);
	conn_close(s->cn);
	set_node(s, host, port);
	return 1;
}

/* ------------------------------------------------------------- Cluster */

/* The node that served us last, then every seed: the first that answers
 * is good enough, as MOVED leads on from there. */
static int
open_cluster(struct server *s, int64_t deadline)
{
	const struct endpoint *ep = &s->cfg->ep;
	int i, st;

	if (s->node_port > 0 && ((st = connect_node(s, s->node_host,
	    s->node_port, deadline)) == 0 || !failure_transient(st)))
		return st;
	for (i = 0; i < ep->nseeds && mono_ms() < deadline; i++) {
		st = connect_node(s, ep->seeds[i].host, ep->seeds[i].port,
		    deadline);
		if (st == 0)
			set_node(s, ep->seeds[i].host, ep->seeds[i].port);
		if (!failure_transient(st))
			return st;
	}
	/* The last node's failure, or none tried in time. */
	if (s->fail.status == 0)
		failure_set(&s->fail, RL_EXIT_UNAVAILABLE, "no node answered "
		    "in time");
	return s->fail.status;
}

int
server_parse_redirect(const char *err, long *slot, char *host, size_t hlen,
    int *port)
{
	const char *sp, *colon;
	long long p, sl;
	char num[16];
	size_t n;
	int ask;

	if (strncmp(err, "MOVED ", 6) == 0)
		ask = 0;
	else if (strncmp(err, "ASK ", 4) == 0)
		ask = 1;
	else
		return -1;
	err += ask ? 4 : 6;
	if ((sp = strchr(err, ' ')) == NULL || (colon = strrchr(sp, ':')) ==
	    NULL || (size_t)(colon - sp - 1) >= hlen)
		return -1;
	if ((n = (size_t)(sp - err)) == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, err, n);
	num[n] = '\0';
	if (int_parse(num, 0, 16383, &sl) < 0 ||
	    int_parse(colon + 1, 1, 65535, &p) < 0)
		return -1;
	memcpy(host, sp + 1, (size_t)(colon - sp - 1));
	host[colon - sp - 1] = '\0';
	*slot = (long)sl;
	*port = (int)p;
	return ask ? SERVER_ASK : SERVER_MOVED;
}

/* What an error reply r means for where to send the next command. */
static enum redirect
classify(struct server *s, const struct reply *r, char *host, size_t hlen,
    int *port)
{
	enum endpoint_kind kind = s->cfg->ep.kind;
	long slot;
	int t;

	if (r->type != REPLY_ERROR || r->str == NULL)
		return GO_NOWHERE;
	if (kind == EP_CLUSTER) {
		if (strncmp(r->str, "TRYAGAIN", 8) == 0)
			return GO_TRYAGAIN;
		t = server_parse_redirect(r->str, &slot, host, hlen, port);
		if (t < 0)
			return GO_NOWHERE;
		/* "MOVED 12 :7001": a node that does not know its own
		 * address means the one we asked. */
		if (host[0] == '\0')
			snprintf(host, hlen, "%s", s->node_host);
		return t == SERVER_ASK ? GO_ASK : GO_MOVED;
	}
	if (kind == EP_SENTINEL && (strncmp(r->str, "READONLY", 8) == 0 ||
	    strncmp(r->str, "UNBLOCKED", 9) == 0))
		return GO_REMASTER;
	return GO_NOWHERE;
}

int
server_take_redirect(struct server *s, const struct reply *r)
{
	char host[256];
	int port;
	enum redirect go = classify(s, r, host, sizeof(host), &port);

	if (go == GO_MOVED)
		set_node(s, host, port);
	if (go != GO_NOWHERE)
		conn_close(s->cn);
	return go != GO_NOWHERE;
}

/* ------------------------------------------------------------ commands */

int
server_open(struct server *s)
{
	int64_t deadline = mono_ms() + s->connect_ms;

	failure_clear(&s->fail);
	switch (s->cfg->ep.kind) {
	case EP_SENTINEL:
		return open_sentinel(s, deadline);
	case EP_CLUSTER:
		return open_cluster(s, deadline);
	default:
		return connect_node(s, NULL, 0, deadline);
	}
}

int
server_open_node(struct server *s, const char *host, int port)
{
	set_node(s, host, port);
	failure_clear(&s->fail);
	return connect_node(s, host, port, mono_ms() + s->connect_ms);
}

static struct reply *
command_once(struct server *s, int argc, const char **argv,
    const size_t *lens)
{
	struct reply *r = conn_command(s->cn, argc, argv, lens);

	if (r == NULL)
		from_conn(s);
	return r;
}

/* ASKING then the command, once, on the node a migration names; then
 * closed, so that the next command goes back home: the slot's owner,
 * still s's node. */
static struct reply *
ask_once(struct server *s, const char *host, int port, int argc,
    const char **argv, const size_t *lens)
{
	const char *asking[1] = { "ASKING" };
	size_t alen[1] = { 6 };
	struct reply *r;

	conn_close(s->cn);
	if (connect_node(s, host, port, mono_ms() + s->connect_ms) != 0 ||
	    (r = command_once(s, 1, asking, alen)) == NULL)
		return NULL;
	reply_free(r);
	r = command_once(s, argc, argv, lens);
	conn_close(s->cn);
	return r;
}

/*
 * A MOVED whose node does not answer (its master died, the failover has
 * yet to name another: the seeds still point there), or redirects that
 * go round (nodes that disagree, mid-failover): weather, not a wrong
 * answer. Recorded as unreachable (a waiter tries again later) with s
 * closed; r is freed. NULL.
 */
static struct reply *
moved_nowhere(struct server *s, struct reply *r, const char *host, int port)
{
	char text[160];

	printable(r->str, r->len, text, sizeof(text));
	if (host != NULL)
		failure_set(&s->fail, RL_EXIT_UNAVAILABLE, "the slot's owner "
		    "%s:%d (%s) does not answer", host, port, text);
	else
		failure_set(&s->fail, RL_EXIT_UNAVAILABLE, "the cluster's "
		    "nodes disagree on the slot's owner (%s)", text);
	reply_free(r);
	conn_close(s->cn);
	return NULL;
}

struct reply *
server_command(struct server *s, int argc, const char **argv,
    const size_t *lens)
{
	int64_t start = mono_ms(), limit = conn_timeout(s->cn);
	char host[256];
	int hops, port, ask;
	enum redirect go;
	struct reply *r;

	failure_clear(&s->fail);
	/* Redirects are counted; TRYAGAIN (a migration between its key
	 * moves and its final SETSLOT) is waited out, within the timeout. */
	for (hops = 0, ask = 0;;) {
		if (!ask && !conn_is_open(s->cn) && server_open(s) != 0)
			return NULL;
		r = ask ? ask_once(s, host, port, argc, argv, lens) :
		    command_once(s, argc, argv, lens);
		ask = 0;
		if (r == NULL)
			return r;
		go = classify(s, r, host, sizeof(host), &port);
		if (hops == MAX_HOPS && go == GO_MOVED)
			return moved_nowhere(s, r, NULL, 0);
		if (hops == MAX_HOPS)
			return r;
		switch (go) {
		case GO_NOWHERE:
			return r;
		case GO_TRYAGAIN:
		case GO_ASK:
			/* ASK, TRYAGAIN, ASK...: the same migration. */
			if (mono_ms() - start > limit)
				return r;
			reply_free(r);
			if (go == GO_TRYAGAIN)
				nap_ms(TRYAGAIN_PAUSE_MS);
			ask = go == GO_ASK;
			break;
		case GO_MOVED:
			set_node(s, host, port);
			conn_close(s->cn);
			hops++;
			/* Opened elsewhere (open_cluster falls back to the
			 * seeds): the node MOVED names did not answer. */
			if (server_open(s) != 0) {
				reply_free(r);
				return NULL;
			}
			if (s->node_port != port ||
			    strcmp(s->node_host, host) != 0)
				return moved_nowhere(s, r, host, port);
			reply_free(r);
			break;
		case GO_REMASTER:
			reply_free(r);
			conn_close(s->cn);
			hops++;
			break;
		}
	}
}

int
server_send(struct server *s, int argc, const char **argv,
    const size_t *lens)
{
	failure_clear(&s->fail);
	if (!conn_is_open(s->cn) && server_open(s) != 0)
		return -1;
	if (conn_send(s->cn, argc, argv, lens) < 0) {
		from_conn(s);
		return -1;
	}
	return 0;
}

int
server_open_start(struct server *s)
{
	return conn_connect_start(s->cn, mono_ms() + s->connect_ms);
}

void
server_open_started(struct server *const *s, int n)
{
	struct conn **cn = xcalloc((size_t)n, sizeof(*cn));
	int *st = xcalloc((size_t)n, sizeof(*st)), i;

	for (i = 0; i < n; i++) {
		failure_clear(&s[i]->fail);
		cn[i] = s[i]->cn;
	}
	conn_connect_started(cn, n, st);
	for (i = 0; i < n; i++)
		if (st[i] != 0)
			(void)from_conn(s[i]);
	free(cn);
	free(st);
}

int
server_queue(struct server *s, const struct conn_req *rq)
{
	/* Not worth a connection of its own: it rides on one in use. */
	if (!conn_is_open(s->cn))
		return -1;
	return conn_queue(s->cn, rq);
}

int
server_recv(struct server *s, int64_t deadline, struct reply **out)
{
	int r = conn_recv(s->cn, deadline, "reply", out);

	if (r < 0)
		from_conn(s);
	return r;
}

struct reply *
server_reply(struct server *s, int64_t deadline, const char *what)
{
	struct reply *r;
	/* Named as server_command names it: by the command. */
	int n = conn_recv(s->cn, deadline, what, &r);

	if (n > 0)
		return r;
	if (n == 0)
		conn_give_up(s->cn, what);
	from_conn(s);
	return NULL;
}

int
server_pending(struct server *s)
{
	return conn_pending(s->cn);
}

int
server_fd(const struct server *s)
{
	return conn_fd(s->cn);
}

int
server_masters(struct server *s, struct hostport **out)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	size_t lens[2] = { 7, 5 }, i;
	const struct reply *m;
	struct reply *r;
	int n = 0, j;

	*out = NULL;
	if ((r = server_command(s, 2, argv, lens)) == NULL)
		return -1;
	if (r->type != REPLY_ARRAY) {
		server_fail_reply(s, "CLUSTER SLOTS", r);
		reply_free(r);
		return -1;
	}
	*out = xcalloc(r->elements + 1, sizeof(**out));
	for (i = 0; i < r->elements; i++) {
		/* {first slot, last slot, {host, port, id...}, replicas...} */
		if (r->element[i]->type != REPLY_ARRAY ||
		    r->element[i]->elements < 3 ||
		    (m = r->element[i]->element[2])->type != REPLY_ARRAY ||
		    m->elements < 2 || m->element[0]->type != REPLY_STRING ||
		    m->element[1]->type != REPLY_INTEGER)
			continue;
		for (j = 0; j < n; j++)
			if ((*out)[j].port == m->element[1]->integer &&
			    strcmp((*out)[j].host, m->element[0]->str) == 0)
				break;
		if (j < n)
			continue;
		(*out)[n].host = xstrdup(m->element[0]->str[0] ?
		    m->element[0]->str : s->node_host);
		(*out)[n++].port = (int)m->element[1]->integer;
	}
	reply_free(r);
	return n;
}
