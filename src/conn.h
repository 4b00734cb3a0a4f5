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

/* How to reach and log in to one server (or one sentinel). */
struct conn_cfg {
	struct endpoint ep;
	const char *password;		/* NULL: no AUTH */
	/* --password-file: read again at every login (a password rotated
	 * under a long run is the one the server wants now); password is
	 * what it held at the start, used while it cannot be read. */
	const char *password_file;
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
 * and log in: AUTH [user] password (--password-file read again), then
 * SELECT db, or a PING when there is neither (a server that accepts but
 * never answers must cost the connect timeout here), all by `deadline`
 * (mono ms). Returns 0, or an exit status (69, 76, 77) with the failure
 * recorded and cn closed.
 */
int conn_connect(struct conn *cn, const char *host, int port,
    int64_t deadline);

/*
 * Start the connect to cfg's own endpoint now, without waiting for it,
 * so that several can be on their way at once from one thread: 1 when
 * conn_connect_started can finish it (a TCP address, not a name or a
 * unix socket, no TLS handshake, no SELECT: a connect and one login
 * command); 0 when conn_connect must do it all. The connect is given
 * until `deadline` (or conn_connect's, if that comes first).
 */
int conn_connect_start(struct conn *cn, int64_t deadline);

/*
 * conn_connect for n conns whose connects conn_connect_start started, all
 * in this thread: each login is written once its connect is made, and
 * every answer read after, so the waits overlap under the deadlines the
 * connects were started with (those started together time out together).
 * st[i]: cn[i]'s status, as conn_connect returns it.
 */
void conn_connect_started(struct conn *const *cn, int n, int *st);

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

/* Takes a queued request's reply (freed after), with its ctx. */
typedef void (*conn_done_fn)(void *ctx, const struct reply *r);

/* A request not waited for (conn_queue), and who takes its reply. */
struct conn_req {
	int argc;
	const char **argv;		/* binary-safe, with lens */
	const size_t *lens;
	conn_done_fn done;
	void *ctx;
};

/*
 * Queue a request (copied: argv need not outlive the call), not waited
 * for: it is written with the next command (or before the next read), in
 * one write, and its reply, met first by that read, goes to done. A check
 * such as CONFIG GET rides along with the command that follows at no
 * round trip of its own. A reply still owed when cn closes is dropped
 * unseen. 0, or -1 when cn is closed or too many replies are owed (the
 * request is then not sent at all).
 */
int conn_queue(struct conn *cn, const struct conn_req *rq);

/* Send one command without waiting for its reply (pipelining, blocking
 * commands, subscriptions): 0, or -1 (cn closed, failure recorded). */
int conn_send(struct conn *cn, int argc, const char **argv,
    const size_t *lens);

/*
 * The next reply, waiting until `deadline` (mono ms) at most: 1 with *out
 * set (the caller frees it), 0 when the deadline passed first (cn still
 * usable: a blocking command may still answer), -1 on failure (cn closed,
 * failure recorded, named by `what`).
 */
int conn_recv(struct conn *cn, int64_t deadline, const char *what,
    struct reply **out);

/*
 * The caller stops waiting for a reply (conn_recv's deadline passed):
 * the failure is recorded as `what`'s timeout, and cn is closed with a
 * reset, so the kernel cannot hand the command to Redis later.
 */
void conn_give_up(struct conn *cn, const char *what);

/*
 * Is a reply, or part of one, already read from the socket? poll() on
 * conn_fd would not show it: wait code asks this first.
 */
int conn_pending(struct conn *cn);

/* The socket to poll for readability, or -1 when closed. */
int conn_fd(const struct conn *cn);

/* Why the last operation failed (status 0 when it did not). */
const struct failure *conn_failure(const struct conn *cn);

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
