/* SPDX-License-Identifier: MIT */
/*
 * One Redis server as the user named it: a plain address, the master
 * behind redis+sentinel:// sentinels, or, behind redis+cluster:// seeds,
 * the node that owns the lock's slot. Finds that node, follows what sends
 * a command elsewhere (MOVED, ASK, TRYAGAIN, READONLY after a failover),
 * and otherwise behaves as one connection (conn.c, which it uses). Never
 * prints; a failure is left in the server for the caller's one message.
 */
#ifndef RLOCK_SERVER_H
#define RLOCK_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "reply.h"
#include "url.h"

struct server;

/* A closed server for cfg (which must outlive it); never NULL. */
struct server *server_new(const struct conn_cfg *cfg, int64_t connect_ms,
    int64_t cmd_ms);

/* A closed server for the same cfg and node as s, to open on its own
 * (another thread's, or a subscription's). */
struct server *server_clone(const struct server *s, int64_t connect_ms,
    int64_t cmd_ms);

void server_free(struct server *s);

/*
 * Find the node and connect within the connect timeout. 0, or an exit
 * status (69, 76, 77) with the failure recorded. Reopening keeps what was
 * learnt (the Cluster node, the sentinel that answered last).
 */
int server_open(struct server *s);

/* Connect to host:port of s's Cluster (list's SCAN of each master). */
int server_open_node(struct server *s, const char *host, int port);

void server_close(struct server *s);
int server_is_open(const struct server *s);
void server_set_timeouts(struct server *s, int64_t connect_ms,
    int64_t cmd_ms);
int64_t server_connect_timeout(const struct server *s);
const struct conn_cfg *server_cfg(const struct server *s);

/*
 * One command, wherever its keys live: redirects are followed, a
 * migration's TRYAGAIN waited out within the command timeout. The reply
 * (error replies included; caller frees), or NULL with the failure
 * recorded and s closed. Reconnects first if s is closed.
 */
struct reply *server_command(struct server *s, int argc, const char **argv,
    const size_t *lens);

/* The raw halves, for blocking commands and subscriptions: no redirect
 * is followed (see server_take_redirect). As conn_send / conn_recv. */
int server_send(struct server *s, int argc, const char **argv,
    const size_t *lens);
int server_recv(struct server *s, int64_t deadline, struct reply **out);
/* The next open's connect started now, as conn_connect_start (a plain
 * TCP address: not a Sentinel or Cluster one, whose opens ask questions
 * of their own); 0 for what that cannot start. */
int server_open_start(struct server *s);
/* server_open of n servers whose connects server_open_start started, at
 * once in this thread (conn_connect_started). */
void server_open_started(struct server *const *s, int n);
/* A request queued on the connection (conn_queue): only on one already
 * open; 0 or -1. */
int server_queue(struct server *s, const struct conn_req *rq);
int server_pending(struct server *s);
int server_fd(const struct server *s);

/*
 * The reply to a command sent with server_send, by `deadline` (mono ms):
 * the reply (error replies included; no redirect followed), or NULL with
 * s closed and the failure recorded. Past the deadline the socket is
 * reset, as after a timed-out server_command, so the kernel cannot hand
 * the command to Redis later. `what` names it in the failure.
 */
struct reply *server_reply(struct server *s, int64_t deadline,
    const char *what);

/*
 * An error reply that sends us elsewhere (MOVED, ASK, TRYAGAIN, a
 * Sentinel master turned READONLY, a blocked command UNBLOCKED by a role
 * change): note where to go, close s and return 1; 0 for any other reply.
 */
int server_take_redirect(struct server *s, const struct reply *r);

/*
 * Sentinel: has the master moved? Asks a sentinel; if it names another
 * node now, s is closed (to reopen there) and 1 returned. 0 when
 * unchanged, unknown, or not behind sentinels. Never fails the caller.
 */
int server_recheck(struct server *s);

/*
 * Cluster: every master (from CLUSTER SLOTS), once each, into *out (the
 * caller frees hosts and array). The count, or -1 with the failure in s.
 */
int server_masters(struct server *s, struct hostport **out);

const struct failure *server_failure(const struct server *s);
struct failure *server_failure_rw(struct server *s);

/* Record a reply of the wrong shape for `what`; returns the status. */
int server_fail_reply(struct server *s, const char *what,
    const struct reply *r);

/*
 * "MOVED slot host:port" / "ASK slot host:port": 1 (MOVED) or 2 (ASK)
 * with its parts, -1 if err is neither. Pure, for tests and fuzzing.
 */
#define SERVER_MOVED 1
#define SERVER_ASK 2
int server_parse_redirect(const char *err, long *slot, char *host,
    size_t hlen, int *port);

#endif
