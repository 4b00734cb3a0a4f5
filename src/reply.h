/* SPDX-License-Identifier: MIT */
/*
 * What Redis answered, in rlock's own type (conn.c builds it from
 * hiredis's reader, so nothing above the transport depends on hiredis),
 * and the one-line failure record every layer carries: an exit status
 * class and the words for the message. Pure: no I/O.
 */
#ifndef RLOCK_REPLY_H
#define RLOCK_REPLY_H

#include <stddef.h>

/* RESP2's reply kinds (the same numbers hiredis uses). */
enum reply_type {
	REPLY_STRING = 1,
	REPLY_ARRAY = 2,
	REPLY_INTEGER = 3,
	REPLY_NIL = 4,
	REPLY_STATUS = 5,
	REPLY_ERROR = 6
};

struct reply {
	enum reply_type type;
	long long integer;		/* REPLY_INTEGER */
	size_t len;			/* STRING, STATUS, ERROR */
	char *str;			/* NUL-terminated as well */
	size_t elements;		/* REPLY_ARRAY */
	struct reply **element;
};

/* Free r and everything below it; NULL is fine. */
void reply_free(struct reply *r);

/* Is r an integer? Then 0 with its value in *out; else -1. */
int reply_int(const struct reply *r, long long *out);

/*
 * What kind of thing failed: the data a layer decides on (retry or not,
 * which cure to print), never the words. Status classes follow from it
 * (reply_status) except where a caller knows better.
 */
enum fail_kind {
	FAIL_NONE = 0,
	FAIL_UNREACHABLE,	/* no connection: refused, no route, no name */
	FAIL_DROPPED,		/* the connection closed or reset under us */
	FAIL_TIMEOUT,		/* no answer in time */
	FAIL_CREDENTIALS,	/* the login refused: WRONGPASS, NOAUTH... */
	FAIL_NOPERM,		/* an ACL refusal of a command, key, channel */
	FAIL_NOT_REDIS,		/* the peer does not speak RESP */
	FAIL_TLS,		/* the TLS handshake or session failed */
	FAIL_TLS_PLAIN,		/* plain text sent to a TLS port */
	FAIL_BUSY,		/* come back later: LOADING, BUSY, MASTERDOWN,
				 * CLUSTERDOWN, TRYAGAIN, max clients */
	FAIL_SERVER,		/* any other error reply (code says which) */
	FAIL_SCRIPT,		/* a refusal by one of rlock's own scripts: a
				 * sentence for the user, not Redis's */
	FAIL_REPLY,		/* a reply of the wrong shape */
	FAIL_OTHER,		/* rlock's own side: a resource, a rule */
	FAIL_REFUSED,		/* the server, or a proxy in front of it,
				 * closed the connection on a command it does
				 * not take (closed_on says which) */
	FAIL_INTERRUPTED	/* a stop signal came first (sig.h): what
				 * waited was given up, as on a timeout */
};

/*
 * The commands a proxy may close the connection on rather than answer,
 * that rlock does without or tells apart (struct failure's closed_on);
 * CMD_NONE for none, or any other command.
 */
enum peer_cmd {
	CMD_NONE = 0,
	CMD_SELECT,
	CMD_CONFIG,
	CMD_SCAN,
	CMD_EVALSHA_RO,
	CMD_EVAL_RO,
	CMD_BLPOP,
	CMD_SSUBSCRIBE
};

/* The command a request's first word (len bytes) names. */
enum peer_cmd peer_cmd(const char *name, size_t len);

/*
 * Why something failed, for one message: the exit status class (69, 76,
 * 77...; 0 while nothing failed), the kind, an error reply's code (its
 * first word: LOADING, MOVED, WRONGPASS...; "" for none) and the
 * server's own text (for the hints that read Redis's words), and the
 * words of the message. closed_on: for a connection the peer closed or
 * reset with replies owed (FAIL_DROPPED), the command of the request it
 * most likely closed on (conn.c says how it tells): a proxy that does
 * not take a command closes the connection on it, where Redis would
 * answer an error.
 */
struct failure {
	int status;
	enum fail_kind kind;
	char code[24];
	char said[128];
	char why[256];
	enum peer_cmd closed_on;
	char acl_rule[96];	/* FAIL_NOPERM: the rule to add; "" unknown */
};

/* Record a failure of `kind` with status and words; code and said are
 * cleared. failure_set is the same with FAIL_OTHER. */
void failure_make(struct failure *f, enum fail_kind kind, int status,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define failure_set(f, status, ...) \
	failure_make((f), FAIL_OTHER, (status), __VA_ARGS__)
void failure_clear(struct failure *f);

/*
 * Exit status for an error reply: 77 for NOAUTH/WRONGPASS/NOPERM, 69 for
 * the transient ones (LOADING, BUSY, max clients, ...), 76 otherwise.
 */
int reply_status(const struct reply *r);

/* Record r (an error, or a reply of the wrong shape for `what`) in f;
 * returns the status. */
int failure_from_reply(struct failure *f, const char *what,
    const struct reply *r);

/* Is f the peer closing the connection, most likely on `cmd`? A
 * proxy that does not take cmd, or a restart: the caller tells. */
int failure_closed_on(const struct failure *f, enum peer_cmd cmd);

/*
 * Is f the peer closing the connection on `cmd` (closed_on)? Then f
 * becomes the refusal of cmd (FAIL_REFUSED, 76: Redis answered, and no
 * retry changes it) and 1; else 0. For a caller sure enough that it was
 * the command, not a restart (conn.c can only guess).
 */
int failure_refused(struct failure *f, enum peer_cmd cmd);

/* Is this status worth a retry on a new connection? */
int failure_transient(int status);

/*
 * Is f worth another try on a new connection, later, by a run that waits
 * (the weather: a restart, a failover, a full or busy server, a redirect
 * to a node that is gone: 69's class)? Not what only the user can change
 * (76, 77). From the status, the kind and the code alone.
 */
int failure_retry(const struct failure *f);

#endif
