// SPDX-License-Identifier: MIT
/*
 * Grammar (a subset of redis-cli's, plus unix sockets):
 *
 *   redis[s]://[[user][:password]@]host[:port][/db][?db=N]
 *   redis[s]://[[user][:password]@][ipv6]:port[/db]
 *   unix://[[user][:password]@]/path/to/socket[?db=N]
 *   redis[s]+sentinel://[[user][:password]@]host[:port][,host[:port]...]
 *       /NAME[/db]
 *   redis[s]+cluster://[[user][:password]@]host[:port][,host[:port]...][/0]
 *
 * The "s" asks for TLS on every connection the URL leads to (sentinels,
 * the master, every cluster node). user and password are percent-decoded;
 * the userinfo ends at the last '@' (unix: the last "@/"), so a generated
 * password with a bare '/', '?' or '@' still works.
 */
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode %XX; NUL bytes cannot go into AUTH, so they are refused. */
static char *
pct_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				goto bad;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0 || (hi | lo) == 0)
				goto bad;
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	/* What was decoded so far may be part of a password. */
	explicit_bzero(out, n + 1);
	free(out);
	return NULL;
}

/* The decimal number of n bytes at s, in [min, max]: a port, a db. */
static int
parse_num(const char *s, size_t n, int min, int max, int *out)
{
	char buf[16];
	long long v;

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (int_parse(buf, min, max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

/*
 * What follows the host: "/N" (slash up to q; none when the N is empty),
 * then "?db=N", the only query parameter we know, from q to the URL's
 * end. "/0?db=2": neither may silently win over the other.
 */
static int
parse_db_query(const char *slash, const char *q, const char *end,
    struct endpoint *ep, const char **why)
{
	if (slash + 1 < q && parse_num(slash + 1, (size_t)(q - slash - 1), 0,
	    1000000, &ep->db) < 0)
		goto bad_db;
	if (slash + 1 < q && q < end) {
		*why = "the database is given twice (/N and ?db=N); "
		    "give it once";
		return -1;
	}
	if (q == end)
		return 0;
	if (end - q < 4 || strncmp(q, "?db=", 4) != 0) {
		*why = "unknown query parameter (only ?db=N is understood)";
		return -1;
	}
	if (parse_num(q + 4, (size_t)(end - q - 4), 0, 1000000, &ep->db) == 0)
		return 0;
bad_db:
	*why = "bad database number";
	return -1;
}

/* userinfo is "user", "user:pass" or ":pass". */
static int
parse_userinfo(const char *s, size_t n, struct endpoint *ep,
    const char **why)
{
	const char *colon = memchr(s, ':', n);
	size_t ulen = colon ? (size_t)(colon - s) : n;

	if (ulen > 0 && (ep->user = pct_decode(s, ulen)) == NULL)
		goto bad;
	if (colon && (ep->pass = pct_decode(colon + 1,
	    n - ulen - 1)) == NULL)
		goto bad;
	return 0;
bad:
	*why = "bad percent-encoding in user or password";
	return -1;
}

/*
 * "host[:port]" or "[ipv6][:port]" of n bytes into *host (allocated as
 * soon as it is cut, so the caller frees it on an error too) and *port.
 */
static int
parse_hostport(const char *s, size_t n, char **host, int *port,
    int dflt_port, const char **why)
{
	const char *end = s + n, *p;

	if (n > 0 && s[0] == '[') {
		if ((p = memchr(s, ']', n)) == NULL) {
			*why = "unclosed '[' in host";
			return -1;
		}
		*host = xstrndup(s + 1, (size_t)(p - s - 1));
		if (++p < end && *p != ':') {
			*why = "junk after ']' in host";
			return -1;
		}
	} else {
		if ((p = memchr(s, ':', n)) == NULL)
			p = end;
		*host = xstrndup(s, (size_t)(p - s));
	}
	if (**host == '\0') {
		*why = "no host";
		return -1;
	}
	/* p: the ':' before the port, or the end. */
	*port = dflt_port;
	if (p < end && parse_num(p + 1, (size_t)(end - p - 1), 1, 65535,
	    port) < 0) {
		*why = "bad port (1-65535)";
		return -1;
	}
	return 0;
}

/*
 * The '@' that ends the userinfo of rest (the URL after "scheme://"), or
 * NULL. The parser and url_password_span both use this, so what we send
 * as the password is exactly what we blank in argv and hide in messages,
 * even for a password with an unencoded '@', '/', ':' or '?'. TCP: the
 * last '@' anywhere, as host, port, db and query never hold one. unix:
 * the last "@/", as the socket path starts with '/'.
 */
static const char *
userinfo_end(const char *rest, int is_unix)
{
	const char *p, *at = NULL;

	if (is_unix && *rest == '/')
		return NULL;
	for (p = rest; *p; p++)
		if (*p == '@' && (!is_unix || p[1] == '/'))
			at = p;
	return at;
}

static int
parse_unix(const char *rest, struct endpoint *ep, const char **why)
{
	const char *end = rest + strlen(rest);
	const char *at = userinfo_end(rest, 1), *path = rest, *q;

	if (*rest != '/') {
		if (at == NULL) {
			*why = "unix:// needs an absolute path (unix:///path)";
			return -1;
		}
		if (parse_userinfo(rest, (size_t)(at - rest), ep, why) < 0)
			return -1;
		path = at + 1;
	}
	q = strchr(path, '?');
	if (q == NULL)
		q = end;
	if (q - path < 2) {
		*why = "no socket path";
		return -1;
	}
	ep->kind = EP_UNIX;
	ep->path = xstrndup(path, (size_t)(q - path));
	return parse_db_query(q, q, end, ep, why);	/* no /N */
}

/* "host[:port],host[:port]..." of n bytes into ep->seeds. */
static int
parse_seeds(const char *s, size_t n, struct endpoint *ep, int dflt_port,
    const char **why)
{
	const char *end = s + n, *comma;
	struct hostport *h;

	do {
		comma = memchr(s, ',', (size_t)(end - s));
		if (comma == NULL)
			comma = end;
		ep->seeds = xrealloc(ep->seeds, (size_t)(ep->nseeds + 1) *
		    sizeof(*ep->seeds));
		/* Counted before it is parsed: url_free frees its host. */
		h = &ep->seeds[ep->nseeds++];
		h->host = NULL;
		if (parse_hostport(s, (size_t)(comma - s), &h->host, &h->port,
		    dflt_port, why) < 0)
			return -1;
		s = comma + 1;
	} while (comma < end);
	return 0;
}

/*
 * redis:// (host, port, db), redis+sentinel:// (the sentinels, then /NAME
 * of the master set) and redis+cluster:// (any nodes of the cluster: the
 * seeds).
 */
static int
parse_net(const char *rest, struct endpoint *ep, enum endpoint_kind kind,
    const char **why)
{
	const char *auth_end = userinfo_end(rest, 0);
	const char *hp = auth_end ? auth_end + 1 : rest;
	const char *end = hp + strlen(hp), *q, *slash, *path;
	size_t plen;

	if (auth_end && parse_userinfo(rest, (size_t)(auth_end - rest), ep,
	    why) < 0)
		return -1;
	ep->kind = kind;
	if ((q = memchr(hp, '?', (size_t)(end - hp))) == NULL)
		q = end;
	if ((slash = memchr(hp, '/', (size_t)(q - hp))) == NULL)
		slash = q;
	if (kind == EP_TCP) {
		if (parse_hostport(hp, (size_t)(slash - hp), &ep->host,
		    &ep->port, 6379, why) < 0)
			return -1;
		return parse_db_query(slash, q, end, ep, why);
	}
	if (parse_seeds(hp, (size_t)(slash - hp), ep, kind == EP_SENTINEL ?
	    26379 : 6379, why) < 0)
		return -1;
	path = slash < q ? slash + 1 : q;
	plen = (size_t)(q - path);
	if (kind == EP_CLUSTER) {
		if (plen > 0 && !(plen == 1 && *path == '0')) {
			*why = "Redis Cluster has only database 0";
			return -1;
		}
		if (q != end) {
			*why = "unknown query parameter";
			return -1;
		}
		return 0;
	}
	slash = memchr(path, '/', plen);
	if (slash == NULL)
		slash = q;
	if (slash == path) {
		*why = "no master name (redis+sentinel://host:port/NAME)";
		return -1;
	}
	ep->master_name = xstrndup(path, (size_t)(slash - path));
	return parse_db_query(slash, q, end, ep, why);
}

/* The schemes, longest first where one is a prefix of another. */
static const struct {
	const char *name;
	enum endpoint_kind kind;
	int tls;
} SCHEMES[] = {
	{ "redis+sentinel://", EP_SENTINEL, 0 },
	{ "rediss+sentinel://", EP_SENTINEL, 1 },
	{ "redis+cluster://", EP_CLUSTER, 0 },
	{ "rediss+cluster://", EP_CLUSTER, 1 },
	{ "redis://", EP_TCP, 0 },
	{ "rediss://", EP_TCP, 1 },
	{ "unix://", EP_UNIX, 0 },
};

/* The scheme of url, or NULL; *rest is what follows "://". */
static const char *
scheme_of(const char *url, const char **rest, enum endpoint_kind *kind,
    int *tls)
{
	size_t i, n;

	for (i = 0; i < sizeof(SCHEMES) / sizeof(SCHEMES[0]); i++) {
		n = strlen(SCHEMES[i].name);
		if (strncmp(url, SCHEMES[i].name, n) == 0) {
			*rest = url + n;
			*kind = SCHEMES[i].kind;
			*tls = SCHEMES[i].tls;
			return SCHEMES[i].name;
		}
	}
	return NULL;
}

int
url_parse(const char *url, struct endpoint *ep, const char **why)
{
	enum endpoint_kind kind;
	const char *rest;
	int tls;

	if (scheme_of(url, &rest, &kind, &tls) == NULL) {
		*why = "unknown scheme (use redis://host:port/db, "
		    "rediss://host:port/db (TLS), unix:///path/to/socket, "
		    "redis+sentinel://host:port/NAME or "
		    "redis+cluster://host:port)";
		return -1;
	}
	ep->tls = tls;
	if (kind == EP_UNIX)
		return parse_unix(rest, ep, why);
	return parse_net(rest, ep, kind, why);
}

void
url_free(struct endpoint *ep)
{
	int i;

	for (i = 0; i < ep->nseeds; i++)
		free(ep->seeds[i].host);
	free(ep->seeds);
	free(ep->master_name);
	free(ep->host);
	free(ep->path);
	free(ep->user);
	if (ep->pass) {
		/* explicit_bzero: a memset before free may be dropped. */
		explicit_bzero(ep->pass, strlen(ep->pass));
		free(ep->pass);
	}
	memset(ep, 0, sizeof(*ep));
}

static char *
dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void
url_copy(struct endpoint *dst, const struct endpoint *src)
{
	int i;

	*dst = *src;
	dst->host = dup_or_null(src->host);
	dst->path = dup_or_null(src->path);
	dst->user = dup_or_null(src->user);
	dst->pass = dup_or_null(src->pass);
	dst->master_name = dup_or_null(src->master_name);
	dst->seeds = NULL;
	if (src->nseeds > 0) {
		dst->seeds = xcalloc((size_t)src->nseeds, sizeof(*dst->seeds));
		for (i = 0; i < src->nseeds; i++) {
			dst->seeds[i] = src->seeds[i];
			dst->seeds[i].host = xstrdup(src->seeds[i].host);
		}
	}
}

void
url_redacted(const struct endpoint *ep, char *buf, size_t len)
{
	static const char *const suffix[] = { [EP_SENTINEL] = "+sentinel",
	    [EP_CLUSTER] = "+cluster" };
	/* TCP: its one host, written as a seed is. */
	struct hostport tcp = { ep->host, ep->port };
	const struct hostport *hp = ep->kind == EP_TCP ? &tcp : ep->seeds;
	int i, n = ep->kind == EP_TCP ? 1 : ep->nseeds;
	char user[128], one[512];
	size_t off;

	/* A decoded %0A must not split the one-line message. */
	printable(ep->user ? ep->user : "", ep->user ? strlen(ep->user) : 0,
	    user, sizeof(user));
	off = (size_t)snprintf(buf, len, "%s%s://%s%s%s", ep->kind == EP_UNIX ?
	    "unix" : ep->tls ? "rediss" : "redis", suffix[ep->kind] ?
	    suffix[ep->kind] : "", user, ep->pass ? ":***" : "", ep->user ||
	    ep->pass ? "@" : "");
	if (ep->kind == EP_UNIX) {
		printable(ep->path, strlen(ep->path), one, sizeof(one));
		if (off < len)
			snprintf(buf + off, len - off, "%s?db=%d", one, ep->db);
		return;
	}
	for (i = 0; i < n && off < len; i++) {
		printable(hp[i].host, strlen(hp[i].host), one, sizeof(one));
		off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s:%d",
		    i ? "," : "", strchr(one, ':') ? "[" : "", one,
		    strchr(one, ':') ? "]" : "", hp[i].port);
	}
	if (ep->kind == EP_CLUSTER || off >= len)
		return;
	if (ep->kind == EP_SENTINEL) {
		printable(ep->master_name, strlen(ep->master_name), one,
		    sizeof(one));
		snprintf(buf + off, len - off, "/%s/%d", one, ep->db);
	} else {
		snprintf(buf + off, len - off, "/%d", ep->db);
	}
}

int
url_password_span(const char *url, size_t *off, size_t *len)
{
	enum endpoint_kind kind;
	const char *rest, *at, *colon;
	int tls;

	if (scheme_of(url, &rest, &kind, &tls) == NULL)
		return -1;
	if ((at = userinfo_end(rest, kind == EP_UNIX)) == NULL)
		return -1;
	colon = memchr(rest, ':', (size_t)(at - rest));
	if (colon == NULL || colon + 1 == at)
		return -1;
	*off = (size_t)(colon + 1 - url);
	*len = (size_t)(at - colon - 1);
	return 0;
}
