/* SPDX-License-Identifier: MIT */
/*
 * redis://, unix://, redis+sentinel:// and redis+cluster:// URLs (and
 * rediss://, rediss+sentinel://, rediss+cluster://: the same over TLS) to
 * a struct endpoint, with percent-decoding and a redacted form for
 * messages. No I/O, no exit.
 */
#ifndef RLOCK_URL_H
#define RLOCK_URL_H

#include <stddef.h>

enum endpoint_kind { EP_TCP, EP_UNIX, EP_SENTINEL, EP_CLUSTER };

struct hostport {
	char *host;		/* name or address, no brackets */
	int port;
};

struct endpoint {
	enum endpoint_kind kind;
	char *host;		/* EP_TCP: name or address, no brackets */
	int port;
	char *path;		/* EP_UNIX: socket path */
	int db;
	char *user;		/* NULL: default user */
	char *pass;		/* NULL: no password in the URL */
	/* EP_SENTINEL: the sentinels; EP_CLUSTER: the seed nodes. */
	struct hostport *seeds;
	int nseeds;
	char *master_name;	/* EP_SENTINEL */
	int tls;		/* rediss*: every connection over TLS */
};

/*
 * Parse url into ep (which the caller zeroes and later frees with
 * url_free). Returns 0, or -1 with a reason (static text) in *why.
 */
int url_parse(const char *url, struct endpoint *ep, const char **why);

void url_free(struct endpoint *ep);

/* A deep copy of src into dst (free with url_free). */
void url_copy(struct endpoint *dst, const struct endpoint *src);

/* "redis://user:***@host:port/db" (rediss:// with tls) or
 * "unix:///path?db=N" for messages. */
void url_redacted(const struct endpoint *ep, char *buf, size_t len);

/*
 * Where the password sits inside url (offset and length), so the caller
 * can blank it in argv; returns 0 if found, -1 if url carries none.
 */
int url_password_span(const char *url, size_t *off, size_t *len);

#endif
