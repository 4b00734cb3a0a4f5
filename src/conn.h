/* SPDX-License-Identifier: MIT */
/*
 * One Redis connection: connect with a deadline, AUTH, SELECT, command
 * timeouts, close-on-exec, and the mapping of failures to exit statuses.
 * A struct conn belongs to one thread at a time (hiredis is not
 * thread-safe). Never prints: the error is left in cn->err for the caller.
 */
#ifndef RLOCK_CONN_H
#define RLOCK_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "url.h"

/* How Redis 7 starts the error of a command its ACL refused inside a
 * script ("... can't run this command", "... access at least one of the
 * keys", "... publish to the channel"): NOPERM in all but name. */
#define SCRIPT_ACL_DENIED "ERR The user executing the script can't"

/* In cn->err when the peer's bytes are not the Redis protocol. */
#define CONN_NOT_REDIS	"the answer is not in the Redis protocol"

struct conn_cfg {
	struct endpoint ep;
	const char *password;		/* NULL: no AUTH */
	const char *sentinel_password;	/* NULL: the sentinels' own, if asked */
	int64_t connect_timeout_ms;
	/* --redlock: one config per master; ep.kind is EP_QUORUM. */
	struct conn_cfg *peers;
	int npeers;
	int64_t peer_timeout_ms;	/* cap on each master's timeouts */
};

/* --redlock takes at most this many masters. */
#define REDLOCK_MAX_PEERS 9

struct conn {
	redisContext *c;		/* NULL while disconnected */
	const struct conn_cfg *cfg;
	int64_t cmd_timeout_ms;
	int64_t connect_timeout_ms;	/* for conn_reopen; cfg's by default */
	int status;			/* exit status class of the last error */
	int own_error;			/* err is a refusal by rlock's script */
	char err[256];			/* what went wrong, for one message */
	/* Sentinel and Cluster: the node we talk to (topo.c finds it). */
	char node_host[256];
	int node_port;			/* 0: not known yet */
	redisContext *sentinel;		/* kept open for the re-checks */
	int sentinel_at;		/* the seed that answered last */
	struct conn *peers;		/* --redlock: one per master */
};

/*
 * Connect, AUTH and SELECT within cfg->connect_timeout_ms, then use
 * cmd_timeout_ms for every command. Returns 0, or an exit status (69, 76,
 * 77) with cn->err set; cn is then disconnected but may be reopened.
 */
int conn_open(struct conn *cn, const struct conn_cfg *cfg,
    int64_t cmd_timeout_ms);

/* Close and connect again with cn's timeouts; as conn_open. */
int conn_reopen(struct conn *cn);

/* A closed conn for the same lock as src (its config, its node), to be
 * opened with conn_reopen. */
void conn_init_like(struct conn *dst, const struct conn *src,
    int64_t connect_ms, int64_t cmd_ms);

/*
 * Sentinel: has the master moved? Asks a sentinel; if NAME's master is
 * now another node, cn is closed (to reopen there) and 1 returned. 0 when
 * unchanged, unknown, or not a Sentinel URL. Never fails the caller.
 */
int conn_recheck(struct conn *cn);

/* Connected (--redlock: to a majority of the masters)? */
int conn_is_open(const struct conn *cn);

/* The underlying socket, or -1 when closed (or --redlock). */
int conn_fd(const struct conn *cn);

/*
 * An error reply that sends us elsewhere (Cluster MOVED/ASK, a Sentinel
 * master turned READONLY, a blocked command UNBLOCKED by a role change):
 * note where to go, close cn and return 1; 0 for any other reply.
 */
int conn_take_redirect(struct conn *cn, const redisReply *r);

/* Talk to host:port from the next (re)connect on (Sentinel, Cluster). */
void conn_set_node(struct conn *cn, const char *host, int port);

/* For topo.c: connect to host:port (NULL host: cfg's endpoint) and do
 * the handshake by the deadline (mono ms). 0, or a status with cn->err. */
int conn_connect_node(struct conn *cn, const char *host, int port,
    int64_t deadline);

/* Change the command timeout of an open or closed cn. */
void conn_set_timeouts(struct conn *cn, int64_t connect_ms, int64_t cmd_ms);

/*
 * Close. After an error the socket is reset (SO_LINGER 0) so the kernel
 * cannot deliver a stale, timed-out command to Redis later.
 */
void conn_close(struct conn *cn);

/*
 * Send one command and read its reply (binary-safe arguments). Returns
 * the reply (an error reply included; caller frees with freeReplyObject),
 * or NULL on an I/O failure or timeout: cn is then closed, cn->err set.
 */
redisReply *conn_command(struct conn *cn, int argc, const char **argv,
    const size_t *lens);

/*
 * Exit status for an error reply: 77 for NOAUTH/WRONGPASS/NOPERM, 69 for
 * the transient ones (LOADING, BUSY, max clients, ...), 76 otherwise.
 */
int conn_reply_status(const redisReply *r);

/* Record an error reply in cn (status and message); returns the status. */
int conn_fail_reply(struct conn *cn, const char *what, const redisReply *r);

/* Is this error status worth a retry on a new connection? */
int conn_status_transient(int status);

#endif
