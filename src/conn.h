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

/* In cn->err when the peer's bytes are not the Redis protocol. */
#define CONN_NOT_REDIS	"the answer is not in the Redis protocol"

struct conn_cfg {
	struct endpoint ep;
	const char *password;		/* NULL: no AUTH */
	int64_t connect_timeout_ms;
};

struct conn {
	redisContext *c;		/* NULL while disconnected */
	const struct conn_cfg *cfg;
	int64_t cmd_timeout_ms;
	int64_t connect_timeout_ms;	/* for conn_reopen; cfg's by default */
	int status;			/* exit status class of the last error */
	int own_error;			/* err is a refusal by rlock's script */
	char err[256];			/* what went wrong, for one message */
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
