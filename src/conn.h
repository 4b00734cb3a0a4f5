/* SPDX-License-Identifier: MIT */
/*
 * One connection to one Redis address (TCP or unix socket): connect and
 * handshake (AUTH, SELECT) within a deadline, commands with a timeout,
 * replies as struct reply. The struct is private to conn.c, the only file
 * that speaks to hiredis; above it nobody sees a socket but as a number to
 * poll. Which node to talk to (Sentinel, Cluster) is server.c's business.
 * A conn belongs to one thread at a time. Never prints: a failure is left
 * in the conn (conn_failure) for the caller's one message.
 */
#ifndef RLOCK_CONN_H
#define RLOCK_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "url.h"

/* In a failure's words when the peer's bytes are not the Redis protocol. */
#define CONN_NOT_REDIS	"the answer is not in the Redis protocol"

/* How to reach and log in to one server (or one sentinel). */
struct conn_cfg {
	struct endpoint ep;
	const char *password;		/* NULL: no AUTH */
	const char *sentinel_password;	/* NULL: the sentinels' own, if asked */
	int64_t connect_timeout_ms;
};

struct conn;

/* A closed connection for cfg (which must outlive it); never NULL. */
struct conn *conn_new(const struct conn_cfg *cfg, int64_t cmd_timeout_ms);

/* Close and free; NULL is fine. */
void conn_free(struct conn *cn);

/*
 * Connect to host:port (NULL host: the cfg's own TCP or unix endpoint)
 * and log in: AUTH [user] password, then SELECT db, or a PING when there
 * is neither (a server that accepts but never answers must cost the
 * connect timeout here), all by `deadline` (mono ms). Returns 0, or an
 * exit status (69, 76, 77) with the failure recorded and cn closed.
 */
int conn_connect(struct conn *cn, const char *host, int port,
    int64_t deadline);

/*
 * Let the next conn_connect send its login (AUTH, or the PING) ahead of
 * the first command, in the same write, instead of waiting for its answer:
 * a round trip less. Not with a database to SELECT. The answer is read
 * first, by the connect's deadline and named as conn_connect names it; a
 * failure then is marked `hello` and closes cn. Whoever sends a command
 * that writes while the login is owed arms its undo first.
 */
void conn_defer_hello(struct conn *cn);

/*
 * After conn_defer_hello, start the connect to cfg's own endpoint without
 * waiting for it, so that several can be on their way at once from one
 * thread: 1 when the conn_connect that follows will wait for nothing
 * but that connect (to a TCP address, not a name or a unix socket), as
 * the login then rides ahead (no TLS handshake, no SELECT); 0 when it
 * does it all itself, as before. The connect is then given until
 * `deadline` or conn_connect's, the sooner: those started together time
 * out together.
 */
int conn_connect_early(struct conn *cn, int64_t deadline);

/* The login sent ahead is unanswered (or not yet sent). */
int conn_hello_owed(const struct conn *cn);

/*
 * A caller that stops waiting (conn_recv's deadline) while the login sent
 * ahead is still unanswered: that is the login's silence, failed as
 * conn_connect's would be (undo written, cn closed in order, failure
 * hello). 1; 0 when no login is owed, and nothing is done.
 */
int conn_hello_silent(struct conn *cn);

/*
 * A command that takes back what the commands sent while the login is
 * owed may do, should the login fail (a server that never answers may
 * still read them later, when we are gone): sent then in the same stream,
 * behind them. Forgotten once the login is answered. Nothing while no
 * login is owed.
 */
void conn_arm_undo(struct conn *cn, int argc, const char **argv,
    const size_t *lens);

/*
 * Close. After a failure the socket is reset (SO_LINGER 0), so the kernel
 * cannot deliver a stale, timed-out command to Redis later.
 */
void conn_close(struct conn *cn);

int conn_is_open(const struct conn *cn);

/* The command timeout from now on. */
void conn_set_timeout(struct conn *cn, int64_t cmd_ms);
int64_t conn_timeout(const struct conn *cn);

/*
 * Send one command and read its reply (binary-safe arguments), within the
 * command timeout. Returns the reply (an error reply included; the caller
 * frees it), or NULL on an I/O failure or timeout: cn is then closed and
 * the failure recorded.
 */
struct reply *conn_command(struct conn *cn, int argc, const char **argv,
    const size_t *lens);

/* Takes the reply to a command sent ahead, with the arg given with it; r
 * is freed after. */
typedef void (*conn_ahead_fn)(void *arg, const struct reply *r);

#define CONN_AHEAD_MAX 4

/*
 * Send a command whose reply nobody waits for now (pipelining): it is
 * written with the next command (or before the next read), in one write,
 * and the next read on cn meets its reply first and hands it to fn (with
 * arg), so a
 * check such as CONFIG GET rides along with the command that follows at
 * no round trip of its own. A reply still owed when cn closes is dropped
 * unseen. 0, or -1 when cn is closed or CONN_AHEAD_MAX are owed.
 */
int conn_send_ahead(struct conn *cn, int argc, const char **argv,
    const size_t *lens, conn_ahead_fn fn, void *arg);

/* Send one command without waiting for its reply (pipelining, blocking
 * commands, subscriptions): 0, or -1 (cn closed, failure recorded). */
int conn_send(struct conn *cn, int argc, const char **argv,
    const size_t *lens);

/*
 * The next reply, waiting until `deadline` (mono ms) at most: 1 with *out
 * set (the caller frees it), 0 when the deadline passed first (cn still
 * usable: a blocking command may still answer), -1 on failure (cn closed,
 * failure recorded).
 */
int conn_recv(struct conn *cn, int64_t deadline, struct reply **out);

/*
 * Is a reply, or part of one, already read from the socket? poll() on
 * conn_fd would not show it: wait code asks this first.
 */
int conn_pending(struct conn *cn);

/* The socket to poll for readability, or -1 when closed. */
int conn_fd(const struct conn *cn);

/* Why the last operation failed (status 0 when it did not). */
const struct failure *conn_failure(const struct conn *cn);

/* Record a failure of the caller's on cn (a reply of the wrong shape). */
int conn_fail_reply(struct conn *cn, const char *what, const struct reply *r);

/* "hiredis X.Y.Z", the protocol library rlock was built with. */
const char *conn_library(void);

/* A command in RESP, as sent: its length, and the bytes at buf (that
 * many; no NUL). Binary-safe. */
size_t conn_format_len(int argc, const size_t *lens);
void conn_format(char *buf, int argc, const char **argv,
    const size_t *lens);

/*
 * RESP bytes to a reply, as conn reads them off a socket: for the unit
 * tests and the fuzzers. 1 with *out, 0 if buf holds no complete reply,
 * -1 if it is not RESP.
 */
int conn_parse(const char *buf, size_t len, struct reply **out);

#endif
