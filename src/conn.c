// SPDX-License-Identifier: MIT
/*
 * hiredis 0.14 rules kept here (see REDIS-NOTES): a context is dead after any
 * error, timeouts included, so it is closed at once; redisConnectWithTimeout
 * sets no read timeout, so redisSetTimeout always follows; 0.14 does not set
 * FD_CLOEXEC, so we do, or COMMAND would inherit the Redis socket.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "exitcode.h"
#include "quorum.h"
#include "topo.h"
#include "util.h"

/* Redirects followed for one command before its reply is returned. */
#define MAX_HOPS 5
#define TRYAGAIN_PAUSE_MS 20

static void set_err(struct conn *cn, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(struct conn *cn, int status, const char *fmt, ...)
{
	va_list ap;

	cn->status = status;
	va_start(ap, fmt);
	vsnprintf(cn->err, sizeof(cn->err), fmt, ap);
	va_end(ap);
}

static int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int
conn_reply_status(const redisReply *r)
{
	const char *s = r->str ? r->str : "";

	if (starts(s, "NOAUTH") || starts(s, "WRONGPASS") ||
	    starts(s, "NOPERM") || starts(s, "ERR invalid password") ||
	    starts(s, "ERR invalid username-password") ||
	    starts(s, "ERR AUTH <password> called without") ||
	    starts(s, "ERR Client sent AUTH") ||
	    starts(s, SCRIPT_ACL_DENIED))
		return RL_EXIT_NOPERM;
	if (starts(s, "LOADING") || starts(s, "BUSY") ||
	    starts(s, "MASTERDOWN") || starts(s, "TRYAGAIN") ||
	    starts(s, "CLUSTERDOWN") ||
	    starts(s, "ERR max number of clients"))
		return RL_EXIT_UNAVAILABLE;
	return RL_EXIT_PROTOCOL;
}

int
conn_status_transient(int status)
{
	return status == RL_EXIT_UNAVAILABLE;
}

/*
 * Redis 7 ends an error raised inside a script with " script: SHA, on
 * @user_script:LINE." The SHA of our own script tells the user nothing
 * and pushes the part that matters out of a one-line message: the length
 * of s without it.
 */
static size_t
script_trailer(const char *s, size_t len)
{
	const char *t = strstr(s, " script: ");

	if (t != NULL && strstr(t, "@user_script:") != NULL)
		return (size_t)(t - s);
	return len;
}

int
conn_fail_reply(struct conn *cn, const char *what, const redisReply *r)
{
	char text[160];

	cn->own_error = 0;
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "RLOCK_", 6) == 0 &&
	    strchr(r->str, ' ')) {
		/* Our own scripts' refusals are sentences for the user. */
		printable(strchr(r->str, ' ') + 1, strlen(strchr(r->str, ' ') +
		    1), text, sizeof(text));
		set_err(cn, RL_EXIT_PROTOCOL, "%s", text);
		cn->own_error = 1;
	} else if (r->type == REDIS_REPLY_ERROR) {
		printable(r->str, script_trailer(r->str, r->len), text,
		    sizeof(text));
		set_err(cn, conn_reply_status(r), "%s: Redis answered: %s",
		    what, text);
	} else {
		snprintf(text, sizeof(text), "unexpected reply of type %d",
		    r->type);
		set_err(cn, RL_EXIT_PROTOCOL, "%s: %s", what, text);
	}
	return cn->status;
}

void
conn_close(struct conn *cn)
{
	if (cn->cfg && cn->cfg->npeers) {
		quorum_close(cn);
		return;
	}
	topo_close(cn);
	if (cn->c == NULL)
		return;
	if (cn->c->err && cn->c->fd >= 0) {
		struct linger lg = { 1, 0 };

		setsockopt(cn->c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	redisFree(cn->c);
	cn->c = NULL;
}

/*
 * A server that turns us away at once (maxclients) writes its error and
 * closes. If that beats our first command, the write fails (EPIPE, or
 * ECONNRESET) with the reason still unread in our socket: read it, as an
 * error reply, rather than report a bare "Broken pipe". 0 if there was one.
 */
static int
last_words(struct conn *cn, char *buf, size_t len)
{
	ssize_t n = recv(cn->c->fd, buf, len - 1, MSG_DONTWAIT);

	if (n < 2 || buf[0] != '-')
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

/* Mark cn failed after an I/O error on cn->c, closing the dead context. */
static void
io_failed(struct conn *cn, const char *what, int saved_errno)
{
	const char *why = cn->c->errstr;
	char buf[128];

	if (cn->c->err == REDIS_ERR_IO && (saved_errno == EPIPE ||
	    saved_errno == ECONNRESET) && last_words(cn, buf,
	    sizeof(buf)) == 0) {
		redisReply r = { .type = REDIS_REPLY_ERROR };

		r.str = buf + 1;
		r.len = strlen(r.str);
		conn_fail_reply(cn, what, &r);
		conn_close(cn);
		return;
	}
	if (cn->c->err == REDIS_ERR_IO &&
	    (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)) {
		snprintf(buf, sizeof(buf), "no answer within %lldms",
		    (long long)cn->cmd_timeout_ms);
		why = buf;
	} else if (cn->c->err == REDIS_ERR_EOF) {
		why = "the server closed the connection";
	} else if (cn->c->err == REDIS_ERR_PROTOCOL) {
		/* Something answered, so it is reachable; but it is not
		 * Redis (an HTTP server, a wrong port): 76, not 69. */
		set_err(cn, RL_EXIT_PROTOCOL, "%s: %s (%s)", what,
		    CONN_NOT_REDIS, why);
		conn_close(cn);
		return;
	}
	set_err(cn, RL_EXIT_UNAVAILABLE, "%s: %s", what, why);
	conn_close(cn);
}

static redisReply *
command_once(struct conn *cn, int argc, const char **argv,
    const size_t *lens)
{
	redisReply *r;

	if (cn->c == NULL) {
		if (cn->err[0] == '\0')
			set_err(cn, RL_EXIT_UNAVAILABLE, "not connected");
		return NULL;
	}
	errno = 0;
	r = redisCommandArgv(cn->c, argc, argv, lens);
	if (r == NULL) {
		io_failed(cn, argv[0], errno);
		return NULL;
	}
	return r;
}

/* ASKING then the command, once, on the node a migration names; then
 * back home (the slot's owner) for the next command. */
static redisReply *
ask_once(struct conn *cn, const char *host, int port, int argc,
    const char **argv, const size_t *lens)
{
	const char *asking[1] = { "ASKING" };
	size_t alen[1] = { 6 };
	char home[sizeof(cn->node_host)];
	int home_port = cn->node_port;
	redisReply *r;

	memcpy(home, cn->node_host, sizeof(home));
	conn_close(cn);
	if (conn_connect_node(cn, host, port, mono_ms() +
	    cn->connect_timeout_ms) != 0)
		return NULL;
	if ((r = command_once(cn, 1, asking, alen)) == NULL)
		return NULL;
	freeReplyObject(r);
	r = command_once(cn, argc, argv, lens);
	conn_close(cn);
	conn_set_node(cn, home, home_port);
	return r;
}

redisReply *
conn_command(struct conn *cn, int argc, const char **argv,
    const size_t *lens)
{
	int64_t start = mono_ms();
	char host[256];
	int hops, port, i, ask, tries = 0;
	redisReply *r;

	/* --redlock: a plain command (a read: CONFIG GET, HGETALL of the
	 * holder) asks the first master that answers. */
	for (i = 0; cn->peers && i < cn->cfg->npeers; i++) {
		if (cn->peers[i].c == NULL)
			continue;
		if ((r = conn_command(&cn->peers[i], argc, argv, lens)))
			return r;
		cn->status = cn->peers[i].status;
		memcpy(cn->err, cn->peers[i].err, sizeof(cn->err));
	}
	if (cn->cfg && cn->cfg->npeers) {
		if (cn->err[0] == '\0')
			set_err(cn, RL_EXIT_UNAVAILABLE, "not connected");
		return NULL;
	}
	/* Redirects are counted; TRYAGAIN (a migration between its key
	 * moves and its final SETSLOT) is waited out, within the timeout. */
	for (hops = 0, ask = 0;;) {
		if (cn->c == NULL && !ask && (hops > 0 || tries > 0) &&
		    conn_reopen(cn) != 0)
			return NULL;
		r = ask ? ask_once(cn, host, port, argc, argv, lens) :
		    command_once(cn, argc, argv, lens);
		ask = 0;
		if (r == NULL || hops == MAX_HOPS)
			return r;
		switch (topo_classify(cn, r, host, sizeof(host), &port)) {
		case TOPO_NONE:
			return r;
		case TOPO_TRYAGAIN:
			if (mono_ms() - start > cn->cmd_timeout_ms)
				return r;
			freeReplyObject(r);
			nap_ms(TRYAGAIN_PAUSE_MS);
			tries++;
			break;
		case TOPO_ASK:
			/* ASK, TRYAGAIN, ASK...: the same migration. */
			if (mono_ms() - start > cn->cmd_timeout_ms)
				return r;
			freeReplyObject(r);
			ask = 1;
			break;
		case TOPO_MOVED:
			conn_set_node(cn, host, port);
			/* FALLTHROUGH */
		case TOPO_REMASTER:
			freeReplyObject(r);
			conn_close(cn);
			hops++;
			break;
		}
	}
}

void
conn_set_node(struct conn *cn, const char *host, int port)
{
	snprintf(cn->node_host, sizeof(cn->node_host), "%s", host);
	cn->node_port = port;
}

int
conn_take_redirect(struct conn *cn, const redisReply *r)
{
	char host[256];
	int port;

	switch (topo_classify(cn, r, host, sizeof(host), &port)) {
	case TOPO_MOVED:
		conn_set_node(cn, host, port);
		/* FALLTHROUGH */
	case TOPO_REMASTER:
	case TOPO_TRYAGAIN:
	case TOPO_ASK:
		conn_close(cn);
		return 1;
	default:
		return 0;
	}
}

static redisContext *
connect_raw(const struct endpoint *ep, const char *host, int port,
    int64_t timeout_ms)
{
	struct timeval tv = tv_of(timeout_ms);

	if (host != NULL)
		return redisConnectWithTimeout(host, port, tv);
	if (ep->kind == EP_UNIX)
		return redisConnectUnixWithTimeout(ep->path, tv);
	return redisConnectWithTimeout(ep->host, ep->port, tv);
}

static int
tune_socket(struct conn *cn)
{
	int fl = fcntl(cn->c->fd, F_GETFD);

	if (fl < 0 || fcntl(cn->c->fd, F_SETFD, fl | FD_CLOEXEC) < 0) {
		set_err(cn, RL_EXIT_UNAVAILABLE, "fcntl: %s",
		    strerror(errno));
		return -1;
	}
	if (cn->cfg->ep.kind != EP_UNIX)
		redisEnableKeepAlive(cn->c);
	return 0;
}

/* One handshake command; 0, or its exit status with cn->err set. */
static int
ask(struct conn *cn, const char *what, int argc, const char **argv)
{
	size_t lens[3];
	redisReply *r;
	int i;

	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	if ((r = conn_command(cn, argc, argv, lens)) == NULL)
		return cn->status;
	if (r->type == REDIS_REPLY_ERROR)
		conn_fail_reply(cn, what, r);
	freeReplyObject(r);
	return cn->status;
}

/*
 * AUTH [user] pass, then SELECT db, all within the connect deadline. With
 * neither, a PING: a server that accepts but never answers (stopped, hung,
 * a wrong port behind a proxy) must cost one --connect-timeout here, not
 * one per later retry of whatever command comes first.
 */
static int
handshake(struct conn *cn)
{
	const struct endpoint *ep = &cn->cfg->ep;
	const char *argv[3];
	char dbs[16];
	int argc = 0;

	if (cn->cfg->password) {
		argv[argc++] = "AUTH";
		if (ep->user)
			argv[argc++] = ep->user;
		argv[argc++] = cn->cfg->password;
		if (ask(cn, "authentication failed", argc, argv) != 0) {
			/* Any error answer to AUTH is a refusal; a peer that
			 * is not Redis (cn->c closed) stays 76. */
			if (cn->status == RL_EXIT_PROTOCOL && cn->c != NULL)
				cn->status = RL_EXIT_NOPERM;
			return cn->status;
		}
	}
	if (ep->db != 0) {
		snprintf(dbs, sizeof(dbs), "%d", ep->db);
		argv[0] = "SELECT";
		argv[1] = dbs;
		return ask(cn, "cannot select the database", 2, argv);
	}
	if (argc == 0) {
		argv[0] = "PING";
		return ask(cn, "PING", 1, argv);
	}
	return 0;
}

int
conn_connect_node(struct conn *cn, const char *host, int port,
    int64_t deadline)
{
	int64_t cmd_timeout_ms = cn->cmd_timeout_ms, left;
	int st;

	if ((left = deadline - mono_ms()) < 1)
		left = 1;
	cn->status = 0;
	cn->err[0] = '\0';
	cn->c = connect_raw(&cn->cfg->ep, host, port, left);
	if (cn->c == NULL) {
		set_err(cn, RL_EXIT_UNAVAILABLE, "out of memory");
		return cn->status;
	}
	if (cn->c->err) {
		if (host)
			set_err(cn, RL_EXIT_UNAVAILABLE, "%s:%d: %s", host,
			    port, cn->c->errstr);
		else
			set_err(cn, RL_EXIT_UNAVAILABLE, "%s", cn->c->errstr);
		redisFree(cn->c);
		cn->c = NULL;
		return cn->status;
	}
	if (tune_socket(cn) < 0) {
		conn_close(cn);
		return cn->status;
	}
	/* A server that accepts and then stays silent counts against the
	 * same connect timeout, not against a fresh command timeout. */
	left = deadline - mono_ms();
	redisSetTimeout(cn->c, tv_of(left));
	cn->cmd_timeout_ms = cn->connect_timeout_ms;	/* for messages */
	st = handshake(cn);
	cn->cmd_timeout_ms = cmd_timeout_ms;
	if (st != 0) {
		conn_close(cn);
		return st;
	}
	redisSetTimeout(cn->c, tv_of(cmd_timeout_ms));
	return 0;
}

static int
open_within(struct conn *cn, int64_t connect_ms, int64_t cmd_timeout_ms)
{
	cn->cmd_timeout_ms = cmd_timeout_ms;
	cn->connect_timeout_ms = connect_ms;
	cn->status = 0;
	cn->err[0] = '\0';
	if (cn->cfg->npeers)
		return quorum_reopen(cn);
	return topo_open(cn, mono_ms() + connect_ms);
}

int
conn_open(struct conn *cn, const struct conn_cfg *cfg,
    int64_t cmd_timeout_ms)
{
	memset(cn, 0, sizeof(*cn));
	cn->cfg = cfg;
	return open_within(cn, cfg->connect_timeout_ms, cmd_timeout_ms);
}

int
conn_reopen(struct conn *cn)
{
	/* A quorum keeps the masters that still answer. */
	if (cn->cfg->npeers)
		return open_within(cn, cn->connect_timeout_ms,
		    cn->cmd_timeout_ms);
	conn_close(cn);
	return open_within(cn, cn->connect_timeout_ms, cn->cmd_timeout_ms);
}

void
conn_init_like(struct conn *dst, const struct conn *src, int64_t connect_ms,
    int64_t cmd_ms)
{
	memset(dst, 0, sizeof(*dst));
	dst->cfg = src->cfg;
	conn_set_node(dst, src->node_host, src->node_port);
	dst->sentinel_at = src->sentinel_at;
	dst->connect_timeout_ms = connect_ms;
	dst->cmd_timeout_ms = cmd_ms;
}

int
conn_recheck(struct conn *cn)
{
	char err[sizeof(cn->err)];
	int status = cn->status, moved;

	memcpy(err, cn->err, sizeof(err));
	moved = topo_recheck(cn);
	memcpy(cn->err, err, sizeof(err));
	cn->status = status;
	return moved;
}

int
conn_is_open(const struct conn *cn)
{
	if (cn->cfg && cn->cfg->npeers)
		return quorum_is_open(cn);
	return cn->c != NULL;
}

int
conn_fd(const struct conn *cn)
{
	return cn->c ? cn->c->fd : -1;
}

void
conn_set_timeouts(struct conn *cn, int64_t connect_ms, int64_t cmd_ms)
{
	if (cn->cfg && cn->cfg->npeers) {
		quorum_set_timeouts(cn, connect_ms, cmd_ms);
		return;
	}
	cn->connect_timeout_ms = connect_ms;
	cn->cmd_timeout_ms = cmd_ms;
	if (cn->c)
		redisSetTimeout(cn->c, tv_of(cmd_ms));
}
