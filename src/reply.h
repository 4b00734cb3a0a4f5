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
 * Why something failed, for one message: the exit status class (69, 76,
 * 77...; 0 while nothing failed), whether the words are a refusal by one
 * of rlock's own scripts (a sentence for the user, not Redis's), whether
 * it is the login's (AUTH or PING) that rode ahead of the first command
 * (conn.h: a server that never took us, and what followed the login may
 * have an undo behind it in the stream: not to be tried again), and the
 * words.
 */
struct failure {
	int status;
	int ours;
	int hello;
	int undo_owed;		/* hello: its undo may still reach the server */
	char why[256];
};

void failure_set(struct failure *f, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void failure_clear(struct failure *f);

/* How Redis 7 starts the error of a command its ACL refused inside a
 * script ("... can't run this command", "... access at least one of the
 * keys", "... publish to the channel"): NOPERM in all but name. */
#define SCRIPT_ACL_DENIED "ERR The user executing the script can't"

/*
 * Exit status for an error reply: 77 for NOAUTH/WRONGPASS/NOPERM, 69 for
 * the transient ones (LOADING, BUSY, max clients, ...), 76 otherwise.
 */
int reply_status(const struct reply *r);

/* Record r (an error, or a reply of the wrong shape for `what`) in f;
 * returns the status. */
int failure_from_reply(struct failure *f, const char *what,
    const struct reply *r);

/* Is this status worth a retry on a new connection? */
int failure_transient(int status);

#endif
