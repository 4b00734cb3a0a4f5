/* SPDX-License-Identifier: MIT */
/*
 * Finding the node to talk to behind a redis+sentinel:// or
 * redis+cluster:// URL, and reading the replies that send us elsewhere.
 * Used by conn.c only; the rest of rlock sees one struct conn.
 */
#ifndef RLOCK_TOPO_H
#define RLOCK_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

enum topo_redirect {
	TOPO_NONE,		/* an answer: hand it to the caller */
	TOPO_MOVED,		/* the slot lives on host:port now */
	TOPO_ASK,		/* this once, ask host:port (migration) */
	TOPO_TRYAGAIN,		/* keys split by a migration: pause, resend */
	TOPO_REMASTER		/* the master changed: ask the sentinels */
};

/* Open cn on the right node by the deadline (mono ms): 0 or a status. */
int topo_open(struct conn *cn, int64_t deadline);

/* What an error reply r means for where to send the next command. */
enum topo_redirect topo_classify(struct conn *cn, const redisReply *r,
    char *host, size_t hlen, int *port);

/*
 * "MOVED slot host:port" / "ASK slot host:port": TOPO_MOVED or TOPO_ASK
 * with its parts, -1 if err is neither. Pure, for tests and fuzzing.
 */
int topo_parse_redirect(const char *err, long *slot, char *host,
    size_t hlen, int *port);

/* See conn_recheck. */
int topo_recheck(struct conn *cn);

/*
 * Cluster: every master (from CLUSTER SLOTS), once each, into *out (the
 * caller frees hosts and array). The count, or -1 with the error in cn.
 */
int topo_masters(struct conn *cn, struct hostport **out);

/* Free what topo keeps in cn (the sentinel connection). */
void topo_close(struct conn *cn);

#endif
