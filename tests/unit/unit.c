// SPDX-License-Identifier: MIT
/*
 * Unit tests of the pure parts of rlock: durations, integers, URLs and
 * their redaction, JSON escaping, printable(), Redis's glob, error
 * replies to exit statuses, cli_parse on argv arrays, and TLS without a
 * TLS server (its refusals of bad files; the handshake against fake peers
 * on loopback). Table-driven ({input, expected} rows, as curl's
 * tool1621.c); prints TAP and exits non-zero if any check failed. Links
 * every object of rlock but main.o; no network beyond loopback.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis.h>

#include "acl.h"
#include "cli.h"
#include "conn.h"
#include "exitcode.h"
#include "glob.h"
#include "keys.h"
#include "lease.h"
#include "mode.h"
#include "reply.h"
#include "resolve.h"
#include "server.h"
#include "tls.h"
#include "url.h"
#include "user.h"
#include "util.h"

/* The three-macro framework (hiredis test.c): one TAP line per check. */
static int tests, fails;

static void check(int cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
check(int cond, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!cond)
		fails++;
	printf("%sok %d - ", cond ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define CHECK(cond, ...)	check((cond), __VA_ARGS__)
#define DIAG(...)		(printf("# " __VA_ARGS__), putchar('\n'))
#define STREQ(a, b)		((a) == NULL ? (b) == NULL : \
				    (b) != NULL && strcmp((a), (b)) == 0)

#define NOPE	INT64_MIN	/* "must be rejected" in a DUR row */
#define LONG	(INT64_MIN + 1)	/* "too long" in a DUR row */

/* ---------------------------------------------------------------- DUR */

static const struct { const char *in; int64_t ms; } DUR_ROWS[] = {
	{ "0", 0 },
	{ "0s", 0 },
	{ "1", 1000 },
	{ "1.5", 1500 },
	{ "1.5s", 1500 },
	{ "0.5", 500 },
	{ ".5", 500 },
	{ "500ms", 500 },
	{ "1ms", 1 },
	{ "30s", 30000 },
	{ "5m", 300000 },
	{ "1.5m", 90000 },
	{ "2h", 7200000 },
	{ "0.25h", 900000 },
	{ "0.0001", 1 },		/* rounds up, never to 0 */
	{ "0.0000000001", 1 },		/* beyond 9 fraction digits too */
	{ "1.0001", 1001 },
	{ "0.5ms", 1 },
	{ "0.000", 0 },
	{ "007", 7000 },
	{ "87840h", 87840LL * 3600000 },	/* DUR_MAX_MS exactly */
	{ "", NOPE },
	{ "-1", NOPE },
	{ "+1", NOPE },
	{ "1e99", NOPE },
	{ "1e3", NOPE },
	{ "abc", NOPE },
	{ "10y", NOPE },
	{ "10S", NOPE },
	{ "1.", NOPE },
	{ ".", NOPE },
	{ "s", NOPE },
	{ "ms", NOPE },
	{ "5 s", NOPE },
	{ " 5", NOPE },
	{ "5 ", NOPE },
	{ "1.2.3", NOPE },
	{ "1,5", NOPE },
	{ "5sec", NOPE },
	{ "0x10", NOPE },
	{ "87841h", LONG },		/* over ten years */
	{ "99999999999999999h", LONG },
	{ "99999999999999999999.5x", NOPE },	/* junk, however long */
	{ "9999999999999999999999999", LONG },
	{ "99999999999999999999ms", LONG },
	{ "9223372036854775807ms", LONG },	/* parses, over ten years */
};

static void
test_dur_parse(void)
{
	size_t i;

	for (i = 0; i < sizeof(DUR_ROWS) / sizeof(DUR_ROWS[0]); i++) {
		int64_t got = -42;
		int r = dur_parse(DUR_ROWS[i].in, &got);

		if (DUR_ROWS[i].ms == NOPE)
			CHECK(r == -1 && got == -42, "dur_parse rejects '%s'",
			    DUR_ROWS[i].in);
		else if (DUR_ROWS[i].ms == LONG)
			CHECK(r == DUR_TOO_LONG && got == -42,
			    "dur_parse: '%s' is too long (got %d)",
			    DUR_ROWS[i].in, r);
		else
			CHECK(r == 0 && got == DUR_ROWS[i].ms,
			    "dur_parse '%s' = %lld ms (got %d, %lld)",
			    DUR_ROWS[i].in, (long long)DUR_ROWS[i].ms, r,
			    (long long)got);
	}
}

static const struct { int64_t ms; const char *out; } FMT_ROWS[] = {
	{ -5, "0ms" },
	{ 0, "0ms" },
	{ 1, "1ms" },
	{ 850, "850ms" },
	{ 999, "999ms" },
	{ 1000, "1.0s" },
	{ 1500, "1.5s" },
	{ 12500, "12.5s" },
	{ 59999, "59.9s" },
	{ 60000, "1m00s" },
	{ 185000, "3m05s" },
	{ 3599999, "59m59s" },
	{ 3600000, "1h00m" },
	{ 7800000, "2h10m" },
	{ 100LL * 3600000, "100h00m" },
};

static void
test_dur_format(void)
{
	char buf[32];
	size_t i;

	for (i = 0; i < sizeof(FMT_ROWS) / sizeof(FMT_ROWS[0]); i++) {
		dur_format(FMT_ROWS[i].ms, buf, sizeof(buf));
		CHECK(strcmp(buf, FMT_ROWS[i].out) == 0,
		    "dur_format %lld = '%s' (got '%s')",
		    (long long)FMT_ROWS[i].ms, FMT_ROWS[i].out, buf);
	}
	/* A short buffer truncates, never overflows. */
	memset(buf, 'x', sizeof(buf));
	dur_format(7800000, buf, 3);
	CHECK(strcmp(buf, "2h") == 0 && buf[3] == 'x',
	    "dur_format stays inside a 3-byte buffer");
}

/* -------------------------------------------------------------- LEASE */

/* The holder's deadline (supervise.c, and the watcher's for its SIGKILL):
 * the last extend plus the lease less the drift, or --max-hold's bound
 * less the drift when that comes first. */
static const struct {
	int64_t last_ok, lease, hold_until, deadline;
} HELD_ROWS[] = {
	{ 0, 30000, INT64_MAX, 29698 },		/* 1% + 2 ms */
	{ 1000, 3000, INT64_MAX, 3968 },
	{ 0, 30000, 10000, 9698 },		/* --max-hold first */
	{ 0, 30000, 40000, 29698 },		/* the lease first */
};

static void
test_lease_held(void)
{
	size_t i;

	for (i = 0; i < sizeof(HELD_ROWS) / sizeof(HELD_ROWS[0]); i++)
		CHECK(lease_held_deadline(HELD_ROWS[i].last_ok,
		    HELD_ROWS[i].lease, HELD_ROWS[i].hold_until) ==
		    HELD_ROWS[i].deadline, "deadline of an extend at %lld, "
		    "lease %lld, hold until %lld: %lld",
		    (long long)HELD_ROWS[i].last_ok,
		    (long long)HELD_ROWS[i].lease,
		    (long long)HELD_ROWS[i].hold_until,
		    (long long)HELD_ROWS[i].deadline);
}

/* A parked renewal thread (renew.c): how often it looks for its grant,
 * and which grants it must be woken for, the first extend being due a
 * third of the lease after the grant. */
static const struct {
	int64_t lease, now, granted; int64_t look; int wake;
} PARK_ROWS[] = {
	{ 30000, 0, 0, 5000, 0 },		/* fresh: seen in time */
	{ 30000, 4999, 0, 5000, 0 },		/* seen at 9999 < 10000 */
	{ 30000, 5000, 0, 5000, 1 },		/* seen at 10000: too late */
	{ 30000, 20000, 0, 5000, 1 },		/* past due already */
	{ 30000, 1000, 2000, 5000, 0 },		/* a later grant */
	{ 100, 16, 0, 16, 0 },			/* 32 < 33 */
	{ 100, 17, 0, 16, 1 },
	{ 3, 0, 0, 1, 1 },			/* never under 1 ms */
	{ 315360000000LL, 0, 0, 60000, 0 },	/* ten years: a minute */
	{ 315360000000LL, 105119940000LL, 0, 60000, 1 },
};

static void
test_lease_park(void)
{
	size_t i;

	for (i = 0; i < sizeof(PARK_ROWS) / sizeof(PARK_ROWS[0]); i++) {
		CHECK(lease_park_look_ms(PARK_ROWS[i].lease) ==
		    PARK_ROWS[i].look && lease_park_wake(PARK_ROWS[i].now,
		    PARK_ROWS[i].granted, PARK_ROWS[i].lease) ==
		    PARK_ROWS[i].wake, "parked thread, lease %lld, armed at "
		    "%lld for a grant at %lld: looks every %lld ms, %s",
		    (long long)PARK_ROWS[i].lease, (long long)PARK_ROWS[i].now,
		    (long long)PARK_ROWS[i].granted,
		    (long long)PARK_ROWS[i].look,
		    PARK_ROWS[i].wake ? "woken" : "not woken");
	}
}

/* ---------------------------------------------------------------- INT */

static const struct {
	const char *in; long long min, max; int ok; long long v;
} INT_ROWS[] = {
	{ "0", 0, 255, 1, 0 },
	{ "255", 0, 255, 1, 255 },
	{ "256", 0, 255, 0, 0 },
	{ "-1", 0, 255, 0, 0 },
	{ "-1", -5, 5, 1, -1 },
	{ "-0", 0, 5, 1, 0 },
	{ "007", 0, 255, 1, 7 },
	{ "", 0, 255, 0, 0 },
	{ "-", -5, 5, 0, 0 },
	{ "+1", 0, 255, 0, 0 },
	{ " 1", 0, 255, 0, 0 },
	{ "1 ", 0, 255, 0, 0 },
	{ "1x", 0, 255, 0, 0 },
	{ "0x1", 0, 255, 0, 0 },
	{ "1.0", 0, 255, 0, 0 },
	{ "--1", -5, 5, 0, 0 },
	{ "1000000", 1, 1000000, 1, 1000000 },
	{ "1000001", 1, 1000000, 0, 0 },
	{ "9223372036854775808", 0, INT64_MAX, 0, 0 },
	{ "99999999999999999999999", 0, INT64_MAX, 0, 0 },
	{ "922337203685477580", 0, INT64_MAX, 1, 922337203685477580LL },
	/* Found by tests/fuzz/fuzz_dur: the last 8 values below 2^63 were
	 * refused, and INT64_MIN could not be written at all. */
	{ "9223372036854775807", 0, INT64_MAX, 1, INT64_MAX },
	{ "9223372036854775800", 0, INT64_MAX, 1, 9223372036854775800LL },
	{ "-9223372036854775808", INT64_MIN, INT64_MAX, 1, INT64_MIN },
	{ "-9223372036854775809", INT64_MIN, INT64_MAX, 0, 0 },
	{ "-9223372036854775808", -5, 5, 0, 0 },
	{ "18446744073709551616", INT64_MIN, INT64_MAX, 0, 0 },
};

static void
test_int_parse(void)
{
	size_t i;

	for (i = 0; i < sizeof(INT_ROWS) / sizeof(INT_ROWS[0]); i++) {
		long long got = -42;
		int r = int_parse(INT_ROWS[i].in, INT_ROWS[i].min,
		    INT_ROWS[i].max, &got);

		if (INT_ROWS[i].ok)
			CHECK(r == 0 && got == INT_ROWS[i].v,
			    "int_parse '%s' in [%lld,%lld] = %lld",
			    INT_ROWS[i].in, INT_ROWS[i].min, INT_ROWS[i].max,
			    INT_ROWS[i].v);
		else
			CHECK(r == -1 && got == -42,
			    "int_parse rejects '%s' in [%lld,%lld]",
			    INT_ROWS[i].in, INT_ROWS[i].min, INT_ROWS[i].max);
	}
}

/* ---------------------------------------------------------------- URL */

struct url_row {
	const char *url;
	int ok;
	enum endpoint_kind kind;
	const char *host;
	int port;
	const char *path;
	int db;
	const char *user, *pass;
	const char *why;	/* substring of the reason, when !ok */
	const char *redacted;	/* url_redacted, when ok */
	const char *span;	/* what url_password_span covers; NULL none */
	int tls;		/* rediss */
};

#define TCP(h, p, d)	.ok = 1, .kind = EP_TCP, .host = (h), .port = (p), \
			.db = (d)
#define TLS(h, p, d)	TCP(h, p, d), .tls = 1
#define UNIX(p, d)	.ok = 1, .kind = EP_UNIX, .path = (p), .db = (d)
#define BAD(w)		.ok = 0, .why = (w)

static const struct url_row URL_ROWS[] = {
	{ "redis://host", TCP("host", 6379, 0),
	    .redacted = "redis://host:6379/0" },
	{ "redis://10.0.0.5:6380", TCP("10.0.0.5", 6380, 0),
	    .redacted = "redis://10.0.0.5:6380/0" },
	{ "redis://host/3", TCP("host", 6379, 3),
	    .redacted = "redis://host:6379/3" },
	{ "redis://host:1/15", TCP("host", 1, 15) },
	{ "redis://host:65535", TCP("host", 65535, 0) },
	{ "redis://host/", TCP("host", 6379, 0) },
	{ "redis://host?db=4", TCP("host", 6379, 4),
	    .redacted = "redis://host:6379/4" },
	{ "redis://host:7000/?db=2", TCP("host", 7000, 2) },
	{ "redis://alice:s3cret@host:7000/2", TCP("host", 7000, 2),
	    .user = "alice", .pass = "s3cret",
	    .redacted = "redis://alice:***@host:7000/2", .span = "s3cret" },
	{ "redis://:s3cret@host", TCP("host", 6379, 0), .pass = "s3cret",
	    .redacted = "redis://:***@host:6379/0", .span = "s3cret" },
	{ "redis://alice@host", TCP("host", 6379, 0), .user = "alice",
	    .redacted = "redis://alice@host:6379/0" },
	{ "redis://alice:@host", TCP("host", 6379, 0), .user = "alice",
	    .pass = "", .redacted = "redis://alice:***@host:6379/0" },
	{ "redis://al%69ce:p%40ss%3Aw%2Fd%3f@host", TCP("host", 6379, 0),
	    .user = "alice", .pass = "p@ss:w/d?",
	    .redacted = "redis://alice:***@host:6379/0",
	    .span = "p%40ss%3Aw%2Fd%3f" },
	{ "redis://a%0Ab:pw@host", TCP("host", 6379, 0), .user = "a\nb",
	    .pass = "pw", .redacted = "redis://a\\x0ab:***@host:6379/0",
	    .span = "pw" },
	{ "unix:///tmp/a\tb", UNIX("/tmp/a\tb", 0),
	    .redacted = "unix:///tmp/a\\x09b?db=0" },
	{ "redis://u:p%25@host", TCP("host", 6379, 0), .user = "u",
	    .pass = "p%", .span = "p%25" },
	/* Unencoded '@' in a password: the last '@' ends the userinfo. */
	{ "redis://u:p@ss@host:6380", TCP("host", 6380, 0), .user = "u",
	    .pass = "p@ss", .span = "p@ss" },
	{ "redis://[::1]:6380", TCP("::1", 6380, 0),
	    .redacted = "redis://[::1]:6380/0" },
	{ "redis://[::1]", TCP("::1", 6379, 0) },
	{ "redis://[fe80::1]:6380/5", TCP("fe80::1", 6380, 5) },
	{ "redis://:pw@[::1]:6380/1", TCP("::1", 6380, 1), .pass = "pw",
	    .redacted = "redis://:***@[::1]:6380/1", .span = "pw" },
	{ "unix:///tmp/redis.sock", UNIX("/tmp/redis.sock", 0),
	    .redacted = "unix:///tmp/redis.sock?db=0" },
	{ "unix:///tmp/redis.sock?db=3", UNIX("/tmp/redis.sock", 3),
	    .redacted = "unix:///tmp/redis.sock?db=3" },
	{ "unix://user:pw@/run/r.sock", UNIX("/run/r.sock", 0),
	    .user = "user", .pass = "pw",
	    .redacted = "unix://user:***@/run/r.sock?db=0", .span = "pw" },
	{ "unix://:pw@/run/r.sock?db=1", UNIX("/run/r.sock", 1),
	    .pass = "pw", .span = "pw" },
	{ "unix://:p@w@/run/r.sock", UNIX("/run/r.sock", 0), .pass = "p@w",
	    .span = "p@w" },
	{ "unix:///tmp/a@b.sock", UNIX("/tmp/a@b.sock", 0) },

	{ "redis://", BAD("no host") },
	{ "redis://:6379", BAD("no host") },
	{ "redis://u:p@", BAD("no host"), .span = "p" },
	{ "redis:///3", BAD("no host") },
	{ "redis://host:0", BAD("port") },
	{ "redis://host:65536", BAD("port") },
	{ "redis://host:abc", BAD("port") },
	{ "redis://host:", BAD("port") },
	{ "redis://host:-1", BAD("port") },
	{ "redis://host:+1", BAD("port") },
	{ "redis://host:99999999", BAD("port") },
	{ "redis://host:6379:1", BAD("port") },
	{ "redis://host/abc", BAD("database") },
	{ "redis://host/-1", BAD("database") },
	{ "redis://host/1/2", BAD("database") },
	{ "redis://host/99999999999999999999", BAD("database") },
	{ "redis://host?db=", BAD("database") },
	{ "redis://host?db=x", BAD("database") },
	{ "unix:///tmp/s?db=x", BAD("database") },
	{ "redis://host?foo=1", BAD("query") },
	{ "redis://host?db=1&foo=2", BAD("database") },
	{ "redis://host/0?db=2", BAD("twice") },
	{ "redis://host/2?db=2", BAD("twice") },
	{ "redis://:pw@[::1]:7/1?db=1", BAD("twice"), .span = "pw" },
	{ "unix:///tmp/s?timeout=1", BAD("query") },
	{ "http://host", BAD("scheme") },
	{ "host:6379", BAD("scheme") },
	{ "", BAD("scheme") },
	{ "rediss://host:6380", TLS("host", 6380, 0),
	    .redacted = "rediss://host:6380/0" },
	{ "rediss://:pw@host:6380/2", TLS("host", 6380, 2), .pass = "pw",
	    .redacted = "rediss://:***@host:6380/2", .span = "pw" },
	{ "rediss://u:p@[::1]", TLS("::1", 6379, 0), .user = "u",
	    .pass = "p", .redacted = "rediss://u:***@[::1]:6379/0",
	    .span = "p" },
	{ "rediss://", BAD("no host") },
	{ "redisss://h", BAD("scheme") },
	{ "rediss:/h", BAD("scheme") },
	{ "unixs:///tmp/s", BAD("scheme") },
	{ "unix://tmp/s", BAD("absolute") },
	{ "unix://", BAD("") },
	{ "unix:///", BAD("path") },
	{ "redis://[::1", BAD("[") },
	{ "redis://[::1]x", BAD("]") },
	{ "redis://u:%zz@host", BAD("percent"), .span = "%zz" },
	{ "redis://u:%4@host", BAD("percent"), .span = "%4" },
	{ "redis://u:%00@host", BAD("percent"), .span = "%00" },
	{ "redis://%zz:p@host", BAD("percent"), .span = "p" },
	/* Unencoded '/', '?' or '@' in a password: it is still the
	 * password, so it is also what gets blanked in argv. */
	{ "redis://:ab/cd@host", TCP("host", 6379, 0), .pass = "ab/cd",
	    .span = "ab/cd" },
	{ "redis://u:p?x@host/2", TCP("host", 6379, 2), .user = "u",
	    .pass = "p?x", .span = "p?x" },
	{ "unix://:p?x@/tmp/s", UNIX("/tmp/s", 0), .pass = "p?x",
	    .span = "p?x" },
	{ "unix://:a/b@/tmp/s?db=2", UNIX("/tmp/s", 2), .pass = "a/b",
	    .span = "a/b" },
	{ "rediss://:a/b@host", TLS("host", 6379, 0), .pass = "a/b",
	    .span = "a/b" },
};

/* Sentinel and Cluster URLs: several hosts, a master name. */
static const struct {
	const char *url;
	enum endpoint_kind kind;
	int nseeds, port0, portn, db;
	const char *host0, *master, *redacted;
	const char *why;		/* non-NULL: rejected naming this */
} MULTI_ROWS[] = {
	{ "redis+sentinel://h1,h2:26380,[::1]:7/mymaster", EP_SENTINEL, 3,
	    26379, 7, 0, "h1", "mymaster",
	    "redis+sentinel://h1:26379,h2:26380,[::1]:7/mymaster/0", NULL },
	{ "redis+sentinel://:pw@h:1/m/3", EP_SENTINEL, 1, 1, 1, 3, "h", "m",
	    "redis+sentinel://:***@h:1/m/3", NULL },
	{ "redis+cluster://a:7001,b:7002", EP_CLUSTER, 2, 7001, 7002, 0, "a",
	    NULL, "redis+cluster://a:7001,b:7002", NULL },
	{ "redis+cluster://u:p@a/0", EP_CLUSTER, 1, 6379, 6379, 0, "a", NULL,
	    "redis+cluster://u:***@a:6379", NULL },
	{ "rediss+sentinel://:pw@h1,h2:26380/m", EP_SENTINEL, 2, 26379,
	    26380, 0, "h1", "m",
	    "rediss+sentinel://:***@h1:26379,h2:26380/m/0", NULL },
	{ "rediss+cluster://a:7001,[::1]:7002", EP_CLUSTER, 2, 7001, 7002,
	    0, "a", NULL, "rediss+cluster://a:7001,[::1]:7002", NULL },
	{ "rediss+cluster://a/1", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "only database 0" },
	{ "redis+sentinel://h1:26379", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "master name" },
	{ "redis+sentinel://h1:26379/", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "master name" },
	{ "redis+sentinel://h1,,h2/m", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "no host" },
	{ "redis+sentinel://h1:x/m", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "port" },
	{ "redis+sentinel://h1/m/x", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "database" },
	{ "redis+sentinel://h1/m/1?db=2", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "twice" },
	{ "redis+cluster://a/2", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "only database 0" },
	{ "redis+cluster://a?db=1", 0, 0, 0, 0, 0, NULL, NULL, NULL,
	    "query" },
};

static void
test_url_multi(void)
{
	size_t i;

	for (i = 0; i < sizeof(MULTI_ROWS) / sizeof(MULTI_ROWS[0]); i++) {
		const char *why = NULL, *u = MULTI_ROWS[i].url;
		struct endpoint ep;
		char red[512];
		int r;

		memset(&ep, 0, sizeof(ep));
		r = url_parse(u, &ep, &why);
		if (MULTI_ROWS[i].why) {
			CHECK(r < 0 && why && strstr(why,
			    MULTI_ROWS[i].why), "url_parse rejects '%s' "
			    "naming '%s' (got %d: %s)", u, MULTI_ROWS[i].why,
			    r, why ? why : "(null)");
			url_free(&ep);
			continue;
		}
		CHECK(r == 0 && ep.kind == MULTI_ROWS[i].kind &&
		    ep.nseeds == MULTI_ROWS[i].nseeds &&
		    STREQ(ep.seeds[0].host, MULTI_ROWS[i].host0) &&
		    ep.seeds[0].port == MULTI_ROWS[i].port0 &&
		    ep.seeds[ep.nseeds - 1].port == MULTI_ROWS[i].portn &&
		    ep.db == MULTI_ROWS[i].db &&
		    STREQ(ep.master_name, MULTI_ROWS[i].master),
		    "url_parse '%s': kind, seeds, master name, db", u);
		if (r == 0) {
			url_redacted(&ep, red, sizeof(red));
			CHECK(strcmp(red, MULTI_ROWS[i].redacted) == 0,
			    "url_redacted '%s' = '%s' (got '%s')", u,
			    MULTI_ROWS[i].redacted, red);
		}
		url_free(&ep);
	}
}

/* Cluster redirections, as Redis words them. */
static void
test_redirect(void)
{
	static const struct {
		const char *err;
		int kind;
		long slot;
		const char *host;
		int port;
	} rows[] = {
		{ "MOVED 1264 127.0.0.1:7501", SERVER_MOVED, 1264, "127.0.0.1",
		    7501 },
		{ "ASK 7629 10.0.0.2:7002", SERVER_ASK, 7629, "10.0.0.2", 7002 },
		{ "MOVED 12 :7001", SERVER_MOVED, 12, "", 7001 },
		{ "MOVED 3 ::1:7000", SERVER_MOVED, 3, "::1", 7000 },
		{ "MOVED 1264", -1, 0, NULL, 0 },
		{ "MOVED 1 h:0", -1, 0, NULL, 0 },
		{ "MOVED 1 h:99999", -1, 0, NULL, 0 },
		{ "ERR MOVED 1 h:1", -1, 0, NULL, 0 },
		{ "TRYAGAIN Multiple keys request during rehashing of slot",
		    -1, 0, NULL, 0 },
	};
	char host[64];
	size_t i;
	long slot;
	int port, t;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		host[0] = '\0';
		slot = -1;
		port = 0;
		t = server_parse_redirect(rows[i].err, &slot, host,
		    sizeof(host), &port);
		if (rows[i].kind < 0)
			CHECK(t == -1, "redirect '%s' refused (got %d)",
			    rows[i].err, t);
		else
			CHECK(t == rows[i].kind && slot == rows[i].slot &&
			    strcmp(host, rows[i].host) == 0 &&
			    port == rows[i].port, "redirect '%s' = %d %ld "
			    "%s:%d (got %d %ld %s:%d)", rows[i].err,
			    rows[i].kind, rows[i].slot, rows[i].host,
			    rows[i].port, t, slot, host, port);
	}
}

static void
check_url_ok(const struct url_row *u, const struct endpoint *ep)
{
	char red[512];

	CHECK(ep->kind == u->kind && ep->tls == u->tls &&
	    STREQ(ep->host, u->host) &&
	    (u->kind == EP_UNIX || ep->port == u->port) &&
	    STREQ(ep->path, u->path) && ep->db == u->db &&
	    STREQ(ep->user, u->user) && STREQ(ep->pass, u->pass),
	    "url_parse '%s': host=%s port=%d db=%d, user and password",
	    u->url, u->host ? u->host : u->path, u->port, u->db);
	url_redacted(ep, red, sizeof(red));
	if (u->redacted)
		CHECK(strcmp(red, u->redacted) == 0,
		    "url_redacted '%s' = '%s' (got '%s')", u->url,
		    u->redacted, red);
	if (ep->pass && *ep->pass)
		CHECK(strstr(red, ep->pass) == NULL && strstr(red, "***"),
		    "url_redacted '%s' hides the password", u->url);
}

static void
check_span(const struct url_row *u)
{
	size_t off = 0, len = 0;
	int r = url_password_span(u->url, &off, &len);

	if (u->span == NULL) {
		CHECK(r == -1, "url_password_span '%s': none", u->url);
		return;
	}
	CHECK(r == 0 && len == strlen(u->span) &&
	    off + len <= strlen(u->url) &&
	    strncmp(u->url + off, u->span, len) == 0,
	    "url_password_span '%s' = '%s' (got %d: '%.*s')", u->url,
	    u->span, r, r == 0 ? (int)len : 0, r == 0 ? u->url + off : "");
}

static void
test_url(void)
{
	size_t i;

	for (i = 0; i < sizeof(URL_ROWS) / sizeof(URL_ROWS[0]); i++) {
		const struct url_row *u = &URL_ROWS[i];
		struct endpoint ep;
		const char *why = NULL;
		int r;

		memset(&ep, 0, sizeof(ep));
		r = url_parse(u->url, &ep, &why);
		if (u->ok) {
			CHECK(r == 0, "url_parse accepts '%s'%s%s", u->url,
			    r ? ": " : "", r && why ? why : "");
			if (r == 0)
				check_url_ok(u, &ep);
		} else if (u->why) {
			CHECK(r == -1 && why && strstr(why, u->why),
			    "url_parse rejects '%s' naming '%s' (got %d: %s)",
			    u->url, u->why, r, why ? why : "(null)");
		}
		url_free(&ep);
		check_span(u);
	}
}

/* ---------------------------------------------------------------- JSON */

static char *
json_of(const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	json_string(f, s, len);
	fclose(f);
	return buf;
}

#define B(s)	s, sizeof(s) - 1	/* bytes with any NULs, and length */

static const struct { const char *in; size_t len; const char *out; }
JSON_ROWS[] = {
	{ B(""), "\"\"" },
	{ B("plain"), "\"plain\"" },
	{ B("say \"hi\""), "\"say \\\"hi\\\"\"" },
	{ B("a\\b"), "\"a\\\\b\"" },
	{ B("a/b"), "\"a/b\"" },
	{ B("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"" },
	{ B("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"" },
	{ B("a\0b"), "\"a\\u0000b\"" },
	{ B("caf\xc3\xa9"), "\"caf\xc3\xa9\"" },		/* é */
	{ B("\xe2\x82\xac"), "\"\xe2\x82\xac\"" },		/* € */
	{ B("\xf0\x9f\x94\x92"), "\"\xf0\x9f\x94\x92\"" },	/* U+1F512 */
	{ B("\xff"), "\"\\u00ff\"" },
	{ B("\xc3"), "\"\\u00c3\"" },				/* cut short */
	{ B("\xc3x"), "\"\\u00c3x\"" },
	{ B("\xc0\xaf"), "\"\\u00c0\\u00af\"" },		/* overlong / */
	{ B("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\"" },	/* overlong */
	{ B("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"" },	/* surrogate */
	{ B("\xf4\x90\x80\x80"),
	    "\"\\u00f4\\u0090\\u0080\\u0080\"" },		/* > U+10FFFF */
	{ B("\x80"), "\"\\u0080\"" },				/* lone cont. */
};

static void
test_json(void)
{
	size_t i;

	for (i = 0; i < sizeof(JSON_ROWS) / sizeof(JSON_ROWS[0]); i++) {
		char *got = json_of(JSON_ROWS[i].in, JSON_ROWS[i].len);

		CHECK(strcmp(got, JSON_ROWS[i].out) == 0,
		    "json_string row %zu = %s (got %s)", i, JSON_ROWS[i].out,
		    got);
		free(got);
	}
	/* The length is what counts, not a NUL. */
	{
		char *got = json_of("abcdef", 3);

		CHECK(strcmp(got, "\"abc\"") == 0, "json_string honours len");
		free(got);
	}
}

/* ---------------------------------------------------------------- printable */

static const struct {
	const char *in; size_t len; size_t buflen; const char *out;
} PRINT_ROWS[] = {
	{ B("abc"), 64, "abc" },
	{ B(""), 64, "" },
	{ B("a b~"), 64, "a b~" },
	{ B("a\nb"), 64, "a\\x0ab" },
	{ B("\x1b[31m"), 64, "\\x1b[31m" },
	{ B("\x7f\xff"), 64, "\\x7f\\xff" },
	{ B("caf\xc3\xa9"), 64, "caf\\xc3\\xa9" },
	{ B("a\0b"), 64, "a\\x00b" },
	/* Cut to fit, and a cut says so with "...". */
	{ B("0123456789abcdef"), 10, "012345..." },
	{ B("\x01\x01\x01\x01\x01"), 16, "\\x01\\x01\\x01..." },
	{ B("\x01\x01\x01\x01\x01"), 15, "\\x01\\x01..." },
	{ B("\x01\x01\x01"), 13, "\\x01\\x01\\x01" },
	{ B("abcdefghi"), 10, "abcdefghi" },
	{ B("abcdefghij"), 10, "abcdef..." },
	{ B("abc"), 1, "" },
	{ B("abcd"), 3, "ab" },
};

static void
test_printable(void)
{
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(PRINT_ROWS) / sizeof(PRINT_ROWS[0]); i++) {
		memset(buf, 'Z', sizeof(buf));
		printable(PRINT_ROWS[i].in, PRINT_ROWS[i].len, buf,
		    PRINT_ROWS[i].buflen);
		CHECK(strcmp(buf, PRINT_ROWS[i].out) == 0 &&
		    (PRINT_ROWS[i].buflen >= sizeof(buf) ||
		    buf[PRINT_ROWS[i].buflen] == 'Z'),
		    "printable row %zu (buf %zu) = '%s' (got '%s')", i,
		    PRINT_ROWS[i].buflen, PRINT_ROWS[i].out, buf);
	}
}

/* ---------------------------------------------------------------- exit */

static const struct { const char *reply; int status; } REPLY_ROWS[] = {
	{ "NOAUTH Authentication required.", RL_EXIT_NOPERM },
	{ "WRONGPASS invalid username-password pair or user is disabled.",
	    RL_EXIT_NOPERM },
	{ "NOPERM this user has no permissions to run the 'evalsha' command",
	    RL_EXIT_NOPERM },
	{ "ERR invalid password", RL_EXIT_NOPERM },
	{ "ERR AUTH <password> called without any password configured for "
	    "the default user. Are you sure your configuration is correct?",
	    RL_EXIT_NOPERM },
	/* Redis 7's words for an ACL refusal inside a script. */
	{ "ERR The user executing the script can't run this command or "
	    "subcommand script: 131b5f2e, on @user_script:1.", RL_EXIT_NOPERM },
	{ "ERR The user executing the script can't access at least one of the "
	    "keys mentioned in the command arguments", RL_EXIT_NOPERM },
	{ "ERR The user executing the script can't publish to the channel "
	    "mentioned in the command", RL_EXIT_NOPERM },
	{ "ERR Error running script (call to f_1): user_script:1: bad",
	    RL_EXIT_PROTOCOL },
	{ "LOADING Redis is loading the dataset in memory",
	    RL_EXIT_UNAVAILABLE },
	{ "BUSY Redis is busy running a script.", RL_EXIT_UNAVAILABLE },
	{ "MASTERDOWN Link with MASTER is down", RL_EXIT_UNAVAILABLE },
	{ "ERR max number of clients reached", RL_EXIT_UNAVAILABLE },
	{ "READONLY You can't write against a read only replica.",
	    RL_EXIT_PROTOCOL },
	{ "WRONGTYPE Operation against a key holding the wrong kind of value",
	    RL_EXIT_PROTOCOL },
	{ "ERR unknown command 'EVALSHA'", RL_EXIT_PROTOCOL },
	{ "ERR DB index is out of range", RL_EXIT_PROTOCOL },
	{ "", RL_EXIT_PROTOCOL },
	/* ACL refusals inside scripts: Redis 7's words, Redis 6's, ours. */
	{ "ERR The user executing the script can't run this command or "
	    "subcommand script: 3b0b, on @user_script:25.", RL_EXIT_NOPERM },
	{ "ERR The user executing the script can't publish to the channel "
	    "mentioned in the command script: c8fd, on @user_script:1.",
	    RL_EXIT_NOPERM },
	{ "ERR Error running script (call to f_1): @user_script:9: NOPERM "
	    "this user has no permissions to run the 'publish' command",
	    RL_EXIT_NOPERM },
	{ "RLOCK_NOPERM +spublish", RL_EXIT_NOPERM },
	{ "RLOCK_MODE the key is in use as a mutex", RL_EXIT_PROTOCOL },
};

/* conn_format writes what hiredis's redisFormatCommandArgv writes, for
 * lengths across digit counts, binary and empty arguments. */
static void
test_conn_format(void)
{
	static char big[100000];
	const char *argv[6] = { "EVALSHA", "", "a\0b\r\n", big, "x", big };
	size_t lens[6] = { 7, 0, 5, 9, 1, 0 }, sizes[] = { 9, 10, 99, 100,
	    999, 1000, 12345, sizeof(big) };
	char *want, *got;
	size_t i, n;
	int wl, ok = 1;

	memset(big, 'z', sizeof(big));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		lens[3] = sizes[i];
		lens[5] = sizes[i] / 7;
		wl = redisFormatCommandArgv(&want, 6, argv, lens);
		n = conn_format_len(6, lens);
		got = xmalloc(n);
		conn_format(got, 6, argv, lens);
		if (wl < 0 || (size_t)wl != n || memcmp(want, got, n) != 0) {
			DIAG("length %zu: differs from hiredis", sizes[i]);
			ok = 0;
		}
		redisFreeCommand(want);
		free(got);
	}
	CHECK(ok, "conn_format: as redisFormatCommandArgv, every length");
	n = conn_format_len(1, lens);
	got = xmalloc(n);
	conn_format(got, 1, argv, lens);
	CHECK(n == 17 && memcmp(got, "*1\r\n$7\r\nEVALSHA\r\n", n) == 0,
	    "conn_format: one argument");
	free(got);
}

static void
test_reply_status(void)
{
	size_t i;

	for (i = 0; i < sizeof(REPLY_ROWS) / sizeof(REPLY_ROWS[0]); i++) {
		struct reply r;

		memset(&r, 0, sizeof(r));
		r.type = REPLY_ERROR;
		r.str = (char *)REPLY_ROWS[i].reply;
		r.len = strlen(r.str);
		CHECK(reply_status(&r) == REPLY_ROWS[i].status,
		    "reply_status '%.30s' = %d", r.str,
		    REPLY_ROWS[i].status);
	}
	CHECK(failure_transient(RL_EXIT_UNAVAILABLE) &&
	    !failure_transient(RL_EXIT_PROTOCOL) &&
	    !failure_transient(RL_EXIT_NOPERM),
	    "only 69 is worth a retry on a new connection");
}

/* An error reply's kind and code, and whether it is worth a retry. */
static const struct {
	const char *reply;
	enum fail_kind kind;
	const char *code;
	int retry;
} KIND_ROWS[] = {
	{ "WRONGPASS invalid username-password pair or user is disabled.",
	    FAIL_CREDENTIALS, "WRONGPASS", 0 },
	{ "NOAUTH Authentication required.", FAIL_CREDENTIALS, "NOAUTH", 0 },
	{ "NOPERM this user has no permissions to run the 'evalsha' command",
	    FAIL_NOPERM, "NOPERM", 0 },
	{ "LOADING Redis is loading the dataset in memory", FAIL_BUSY,
	    "LOADING", 1 },
	{ "BUSY Redis is busy running a script.", FAIL_BUSY, "BUSY", 1 },
	{ "ERR max number of clients reached", FAIL_BUSY, "ERR", 1 },
	{ "MASTERDOWN Link with MASTER is down", FAIL_BUSY, "MASTERDOWN", 1 },
	{ "CLUSTERDOWN The cluster is down", FAIL_BUSY, "CLUSTERDOWN", 1 },
	{ "TRYAGAIN Multiple keys request during rehashing of slot",
	    FAIL_BUSY, "TRYAGAIN", 1 },
	{ "MOVED 1875 127.0.0.1:17005", FAIL_SERVER, "MOVED", 1 },
	{ "READONLY You can't write against a read only replica.",
	    FAIL_SERVER, "READONLY", 0 },
	{ "ERR unknown command 'EVALSHA'", FAIL_SERVER, "ERR", 0 },
	{ "RLOCK_LIMIT --limit 3 differs from the holders' 2", FAIL_SCRIPT,
	    "RLOCK_LIMIT", 0 },
};

static void
test_failure_kind(void)
{
	struct failure f;
	struct reply r;
	size_t i;

	for (i = 0; i < sizeof(KIND_ROWS) / sizeof(KIND_ROWS[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.type = REPLY_ERROR;
		r.str = (char *)KIND_ROWS[i].reply;
		r.len = strlen(r.str);
		(void)failure_from_reply(&f, "acquire", &r);
		CHECK(f.kind == KIND_ROWS[i].kind &&
		    strcmp(f.code, KIND_ROWS[i].code) == 0 &&
		    failure_retry(&f) == KIND_ROWS[i].retry,
		    "failure kind of '%.30s': %d %s %d", r.str, (int)f.kind,
		    f.code, failure_retry(&f));
	}
	failure_make(&f, FAIL_TIMEOUT, RL_EXIT_UNAVAILABLE, "x");
	CHECK(failure_retry(&f), "a timeout is worth a retry");
	failure_make(&f, FAIL_TLS_PLAIN, RL_EXIT_UNAVAILABLE, "x");
	CHECK(!failure_retry(&f), "not plain text against a TLS port");
	failure_make(&f, FAIL_NOT_REDIS, RL_EXIT_PROTOCOL, "x");
	CHECK(!failure_retry(&f) && f.code[0] == '\0',
	    "not a peer that is not Redis");
	failure_make(&f, FAIL_INTERRUPTED, RL_EXIT_UNAVAILABLE, "x");
	CHECK(!failure_retry(&f), "not a try a stop signal cut short");
}

/* Lookups by a deadline, on a thread (no sig_setup here: not listening):
 * an address at once, a name by the deadline, a past deadline refused. */
static void
test_resolve(void)
{
	struct addrinfo hints = { .ai_family = AF_INET,
	    .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int rc;

	rc = resolve("127.0.0.1", "6379", &hints, mono_ms() - 1, &ai);
	CHECK(rc == 0 && ai != NULL, "an address needs no time: %d", rc);
	if (ai)
		freeaddrinfo(ai);
	ai = NULL;
	rc = resolve("localhost", "6379", &hints, mono_ms() + 5000, &ai);
	CHECK(rc == 0 && ai != NULL && ai->ai_family == AF_INET,
	    "localhost on a thread: %d", rc);
	if (ai)
		freeaddrinfo(ai);
	ai = NULL;
	rc = resolve("localhost", "6379", &hints, mono_ms() - 1, &ai);
	CHECK(rc == EAI_AGAIN && ai == NULL, "a deadline passed: %d", rc);
}

/* The retry policy's table: weather is 69's class; the backoff doubles
 * up to 1 s. */
static void
test_retry(void)
{
	static const int64_t want[] = { 100, 200, 400, 800, 1000, 1000 };
	struct failure f;
	size_t i;

	failure_set(&f, RL_EXIT_UNAVAILABLE, "Connection refused");
	CHECK(failure_retry(&f), "retry: unreachable is weather");
	failure_set(&f, RL_EXIT_PROTOCOL, "WRONGTYPE");
	CHECK(!failure_retry(&f), "retry: not 76");
	failure_set(&f, RL_EXIT_NOPERM, "WRONGPASS");
	CHECK(!failure_retry(&f), "retry: not 77");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(retry_backoff_ms((int)i) == want[i],
		    "retry_backoff_ms(%zu) = %lld", i, (long long)want[i]);
	CHECK(retry_backoff_ms(1000) == RETRY_BACKOFF_MAX_MS,
	    "retry_backoff_ms: capped after many tries");
}

/* ---------------------------------------------------------------- cli */

#define ANY	(-999)		/* do not check this field */
#define MAXARGV	16

struct cli_row {
	const char *name;
	const char *argv[MAXARGV];	/* after "rlock" */
	int status;
	int mode;			/* enum rl_mode or ANY */
	const char *key;
	int chk_wait, chk_conflict;	/* check wait_ms, conflict */
	int64_t wait_ms;
	int64_t lease_ms;		/* 0: not checked */
	int conflict;
	long limit;			/* 0: not checked */
	const char *cmd;		/* COMMAND words joined by '|' */
	const char *args;		/* subcommand arguments, '|'-joined */
	const char *msg;		/* substring of the error line */
	int no_try;			/* error without the "Try" line */
};

#define OK_RUN	.status = 0, .mode = MODE_RUN
#define USAGE(m) .status = RL_EXIT_USAGE, .mode = ANY, .msg = (m)
#define WAIT(ms)	.chk_wait = 1, .wait_ms = (ms)
#define CONFLICT(n)	.chk_conflict = 1, .conflict = (n)

static const struct cli_row CLI_ROWS[] = {
	{ "plain run", { "-k", "k", "--", "true" }, OK_RUN, .key = "k",
	    WAIT(-1), .lease_ms = 30000, CONFLICT(75), .limit = 1,
	    .cmd = "true" },
	{ "+ stops at COMMAND: -l stays with ls",
	    { "-k", "k", "ls", "-l", "-n" }, OK_RUN,
	    .lease_ms = 30000, WAIT(-1), .cmd = "ls|-l|-n" },
	{ "after -- COMMAND may look like an option",
	    { "-k", "k", "--", "-n", "x" }, OK_RUN, WAIT(-1),
	    .cmd = "-n|x" },
	{ "argv passed untouched", { "-k", "k", "echo", "", "a b", "*",
	    "--" }, OK_RUN, .cmd = "echo||a b|*|--" },
	{ "long options", { "--key=k", "--timeout", "2.5", "--lease=1s",
	    "--conflict-exit-code", "9", "--", "x" }, OK_RUN, .key = "k",
	    WAIT(2500), .lease_ms = 1000, CONFLICT(9), .cmd = "x" },
	{ "-n", { "-n", "-k", "k", "x" }, OK_RUN, WAIT(0) },
	{ "-w 0 is -n", { "-w", "0", "-k", "k", "x" }, OK_RUN,
	    WAIT(0) },
	{ "-w 500ms", { "-w", "500ms", "-k", "k", "x" }, OK_RUN,
	    WAIT(500) },
	{ "-E 0", { "-E", "0", "-k", "k", "x" }, OK_RUN,
	    CONFLICT(0) },
	{ "-E 255", { "-E", "255", "-k", "k", "x" }, OK_RUN,
	    CONFLICT(255) },
	{ "-E 256", { "-E", "256", "-k", "k", "x" }, USAGE("256") },
	{ "-E -1", { "-E", "-1", "-k", "k", "x" }, USAGE("-1") },
	{ "-E x", { "-E", "x", "-k", "k", "x" }, USAGE("conflict") },
	{ "-N 1000000", { "-N", "1000000", "-k", "k", "x" }, OK_RUN,
	    .limit = 1000000 },
	{ "-N 3", { "-N", "3", "-k", "k", "x" }, OK_RUN,
	    .limit = 3 },
	{ "-N 0", { "-N", "0", "-k", "k", "x" }, USAGE("limit") },
	{ "-N 1000001", { "-N", "1000001", "-k", "k", "x" },
	    USAGE("limit") },
	{ "-l 100ms is the minimum", { "-l", "100ms", "-k", "k", "x" },
	    OK_RUN, .lease_ms = 100 },
	{ "-l 0.1", { "-l", "0.1", "-k", "k", "x" }, OK_RUN,
	    .lease_ms = 100 },
	{ "-l 99ms", { "-l", "99ms", "-k", "k", "x" }, USAGE("lease") },
	{ "-l 0", { "-l", "0", "-k", "k", "x" }, USAGE("lease") },
	{ "-w bad duration", { "-w", "5x", "-k", "k", "x" },
	    USAGE("--timeout") },
	{ "-w -1", { "-w", "-1", "-k", "k", "x" }, USAGE("--timeout") },
	{ "--kill-after bad", { "--kill-after", "1.", "-k", "k", "x" },
	    USAGE("--kill-after") },
	{ "--connect-timeout 0", { "--connect-timeout", "0", "-k", "k",
	    "x" }, USAGE("--connect-timeout") },
	{ "--on-lost bad", { "--on-lost", "stop", "-k", "k", "x" },
	    USAGE("--on-lost") },
	{ "-c alone", { "-k", "k", "-c", "echo hi" }, OK_RUN,
	    .cmd = "" },
	{ "-c with extra args", { "-k", "k", "-c", "echo", "hi" },
	    USAGE("-c") },
	{ "-- alone", { "-k", "k", "--" }, USAGE("missing command") },
	{ "no command", { "-k", "k" }, USAGE("missing command") },
	{ "no arguments", { NULL }, USAGE("missing -k") },
	{ "command without -k", { "ls", "-l" }, USAGE("missing -k") },
	{ "empty key", { "-k", "", "x" }, USAGE("empty") },
	{ "-k needs a value", { "-k" }, USAGE("-k") },
	{ "--key needs a value", { "--key" }, USAGE("--key") },
	{ "unknown short option", { "-Z", "-k", "k", "x" }, USAGE("-Z") },
	{ "unknown long option", { "--frobnicate", "-k", "k", "x" },
	    USAGE("--frobnicate") },
	{ "ambiguous long option", { "--p=x", "-k", "k", "x" },
	    USAGE("ambiguous option '--p'") },
	{ "long option given a value", { "--nonblock=1", "-k", "k", "x" },
	    USAGE("'--nonblock' takes no value") },
	{ "unknown option in a cluster", { "-nZ", "-k", "k", "x" },
	    USAGE("unknown option '-Z'") },
	{ "--prefix needs a value", { "-k", "k", "--prefix" },
	    USAGE("'--prefix' needs a value") },
	{ "-w needs a value (clustered)", { "-k", "k", "-nw" },
	    USAGE("'-w' needs a value") },
	{ "--help", { "--help" }, .status = 0, .mode = MODE_HELP },
	{ "-h with junk", { "-h", "-k", "k" }, .status = 0,
	    .mode = MODE_HELP },
	{ "--version", { "--version" }, .status = 0, .mode = MODE_VERSION,
	    },
	{ "status", { "status", "a", "b" }, .status = 0, .mode = MODE_STATUS,
	    .args = "a|b" },
	{ "status --json", { "status", "--json", "a" }, .status = 0,
	    .mode = MODE_STATUS, .args = "a" },
	{ "status KEY --json", { "status", "a", "--json" }, .status = 0,
	    .mode = MODE_STATUS, .args = "a" },
	{ "status -- -odd", { "status", "--", "-odd" }, .status = 0,
	    .mode = MODE_STATUS, .args = "-odd" },
	{ "status without KEY", { "status" }, USAGE("KEY") },
	{ "status --force", { "status", "--force", "a" }, USAGE("--force") },
	{ "status -k", { "status", "-k", "a" },
	    USAGE("unknown option '-k' for status") },
	{ "-u before status", { "-u", "redis://h", "status", "a" },
	    .status = 0, .mode = MODE_STATUS, .args = "a" },
	{ "-u after status", { "status", "-u", "redis://h", "a" },
	    .status = 0, .mode = MODE_STATUS, .args = "a" },
	{ "-q before status", { "-q", "status", "a" }, .status = 0,
	    .mode = MODE_STATUS, .args = "a" },
	{ "run option before status", { "-n", "status", "a" },
	    USAGE("status") },
	{ "list", { "list" }, .status = 0, .mode = MODE_LIST,
	    .args = "" },
	{ "list PATTERN", { "list", "--json", "a*" }, .status = 0,
	    .mode = MODE_LIST, .args = "a*" },
	{ "list two patterns", { "list", "a", "b" }, USAGE("PATTERN") },
	{ "release --force KEY", { "release", "--force", "a" }, .status = 0,
	    .mode = MODE_RELEASE, .args = "a" },
	{ "release without --force", { "release", "a" }, USAGE("--force") },
	{ "release --force no KEY", { "release", "--force" },
	    USAGE("KEY") },
	{ "release --force two KEYs", { "release", "--force", "a", "b" },
	    USAGE("KEY") },
	{ "release --json", { "release", "--json", "--force", "a" },
	    USAGE("--json") },
	{ "-k KEY status runs a program called status",
	    { "-k", "k", "status" }, OK_RUN, .cmd = "status" },
	{ "bad URL in -u, password hidden", { "-u", "redis://:pw@h:0",
	    "-k", "k", "x" }, USAGE("'redis://:**@h:0' (-u): bad port") },
	{ "rediss:// is TLS", { "-u", "rediss://h", "-k", "k", "x" },
	    OK_RUN },
	{ "--redlock takes rediss:// masters", { "--redlock", "-u",
	    "rediss://a", "-u", "rediss://b", "-u", "redis://c", "-k", "k",
	    "x" }, OK_RUN },
	{ "--redlock refuses a sentinel master", { "--redlock", "-u",
	    "rediss://a", "-u", "rediss://b", "-u", "rediss+sentinel://c/m",
	    "-k", "k", "x" }, USAGE("URL 3 is not") },
	{ "--tls-sni needs a name", { "--tls-sni", "", "-k", "k", "x" },
	    USAGE("--tls-sni needs a name") },
	{ "--tls-cacert needs a value", { "-k", "k", "--tls-cacert" },
	    USAGE("'--tls-cacert' needs a value") },
	{ "--tls takes no value", { "--tls=1", "-k", "k", "x" },
	    USAGE("'--tls' takes no value") },
	{ "--tls-c is ambiguous", { "--tls-c=x", "-k", "k", "x" },
	    USAGE("ambiguous option '--tls-c'") },
	{ "bad URL before a subcommand", { "-u", "http://h", "status",
	    "a" }, USAGE("scheme") },
	{ "status --help ignores the URL", { "-u", "http://h", "status",
	    "--help" }, .status = 0, .mode = MODE_HELP },
	{ "missing password file", { "--password-file",
	    "/nonexistent/pw", "-k", "k", "x" }, .status = RL_EXIT_USAGE,
	    .mode = ANY, .msg = "/nonexistent/pw", .no_try = 1 },
	/* Found by tests/fuzz/fuzz_cli: a bad letter inside a cluster was
	 * blamed on the word before it ("option '--fair' takes no value"). */
	{ "bad letter in a cluster after a long option",
	    { "--fair", "-Zn", "-k", "k", "x" }, USAGE("unknown option '-Z'") },
	{ "bad letter in a cluster first", { "-Zn", "-k", "k", "x" },
	    USAGE("unknown option '-Z'") },
	{ "-json after --json", { "status", "--json", "-json", "a" },
	    USAGE("unknown option '-j' for status") },
	/* Found by tests/fuzz/fuzz_cli: words from argv went into the
	 * message raw, so a newline split the one line. */
	{ "newline in an unknown option", { "--a\nb", "-k", "k", "x" },
	    USAGE("unknown option '--a\\x0ab'") },
	{ "escape sequence in a duration", { "-w", "1\x1b[31m", "-k", "k",
	    "x" }, USAGE("'1\\x1b[31m'") },
	{ "newline in a command without -k", { "ls\nrm" },
	    USAGE("'ls\\x0arm'") },
	{ "newline in a password file name", { "--password-file",
	    "/nonexistent/a\nb", "-k", "k", "x" }, .status = RL_EXIT_USAGE,
	    .mode = ANY, .msg = "/nonexistent/a\\x0ab", .no_try = 1 },
};

/* argv as writable strings, as the kernel gives them. */
static char **
make_argv(const char *const *words, int *argc)
{
	char **av = calloc(MAXARGV + 2, sizeof(*av));
	int n = 0;

	av[n++] = strdup("rlock");
	while (n <= MAXARGV && words[n - 1])
		av[n] = strdup(words[n - 1]), n++;
	av[n] = NULL;
	*argc = n;
	return av;
}

static void
free_argv(char **av)
{
	int i;

	for (i = 0; av[i]; i++)
		free(av[i]);
	free(av);
}

static char *
join(char *const *v, int n)
{
	static char buf[512];
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && v[i]; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
		    i ? "|" : "", v[i]);
	return buf;
}

/* cli_parse with stderr captured into err (NUL-terminated). */
static int
parse_captured(int argc, char **argv, struct rlock_opts *o, char *err,
    size_t errlen)
{
	FILE *tmp = tmpfile();
	int saved, st;
	size_t n;

	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	optind = 0;		/* glibc: full re-initialisation */
	msg_level = MSG_NORMAL;
	st = cli_parse(argc, argv, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, errlen - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	return st;
}

/* One "rlock: ..." line, then the "Try" line unless no_try. */
static int
error_shape_ok(const char *err, int no_try)
{
	const char *nl = strchr(err, '\n');
	static const char try[] =
	    "Try 'rlock --help' for more information.\n";

	if (strncmp(err, "rlock: ", 7) != 0 || nl == NULL)
		return 0;
	if (no_try)
		return nl[1] == '\0';
	return strcmp(nl + 1, try) == 0;
}

static void
check_cli_row(const struct cli_row *r, const struct rlock_opts *o, int st,
    const char *err)
{
	int ok = st == r->status;

	if (ok && r->status != 0) {
		CHECK(error_shape_ok(err, r->no_try) &&
		    (r->msg == NULL || strstr(err, r->msg)),
		    "cli: %s: status %d, one line naming '%s'", r->name,
		    r->status, r->msg ? r->msg : "");
		if (!error_shape_ok(err, r->no_try))
			DIAG("stderr was: %s", err);
		return;
	}
	if (ok && r->mode != ANY)
		ok = (int)o->mode == r->mode;
	if (ok && r->key)
		ok = o->key && strcmp(o->key, r->key) == 0;
	if (ok && r->chk_wait)
		ok = o->wait_ms == r->wait_ms;
	if (ok && r->lease_ms)
		ok = o->lease_ms == r->lease_ms;
	if (ok && r->chk_conflict)
		ok = o->conflict_exit == r->conflict;
	if (ok && r->limit)
		ok = o->limit == r->limit;
	if (ok && r->cmd)
		ok = o->cmd && strcmp(join(o->cmd, MAXARGV), r->cmd) == 0;
	if (ok && r->args)
		ok = strcmp(join(o->args, o->nargs), r->args) == 0;
	if (ok && r->status == 0)
		ok = err[0] == '\0';
	CHECK(ok, "cli: %s (status %d, got %d)", r->name, r->status, st);
	if (!ok)
		DIAG("stderr was: %s", err);
}

static void
test_cli_rows(void)
{
	char err[4096];
	size_t i;

	for (i = 0; i < sizeof(CLI_ROWS) / sizeof(CLI_ROWS[0]); i++) {
		struct rlock_opts o;
		char **av;
		int argc, st;

		av = make_argv(CLI_ROWS[i].argv, &argc);
		st = parse_captured(argc, av, &o, err, sizeof(err));
		check_cli_row(&CLI_ROWS[i], &o, st, err);
		cli_free(&o);
		free_argv(av);
	}
}

/* Keys of 512 and 513 bytes, and a key with any bytes but NUL. */
static void
test_cli_keys(void)
{
	static const char *words[] = { "-k", NULL, "x", NULL };
	char key[600], err[4096];
	struct rlock_opts o;
	char **av;
	int argc, st;

	memset(key, 'a', sizeof(key));
	key[512] = '\0';
	words[1] = key;
	av = make_argv(words, &argc);
	st = parse_captured(argc, av, &o, err, sizeof(err));
	CHECK(st == 0 && strlen(o.key) == 512, "cli: 512-byte key accepted");
	cli_free(&o);
	free_argv(av);

	key[512] = 'a';
	key[513] = '\0';
	av = make_argv(words, &argc);
	st = parse_captured(argc, av, &o, err, sizeof(err));
	CHECK(st == RL_EXIT_USAGE && error_shape_ok(err, 0) &&
	    strstr(err, "512"), "cli: 513-byte key refused naming 512");
	cli_free(&o);
	free_argv(av);

	words[1] = "\xff\n{}*?";
	av = make_argv(words, &argc);
	st = parse_captured(argc, av, &o, err, sizeof(err));
	CHECK(st == 0 && strcmp(o.key, "\xff\n{}*?") == 0,
	    "cli: key with odd bytes accepted as given");
	cli_free(&o);
	free_argv(av);
}

/* The password in -u leaves argv (ps, /proc/PID/cmdline) at once. */
static void
test_cli_password_blanked(void)
{
	static const struct { const char *w[6]; const char *secret; } rows[] = {
		{ { "-u", "redis://u:secret@h", "-k", "k", "x" }, "secret" },
		{ { "--url=redis://:secret@h:1/2", "-k", "k", "x" },
		    "secret" },
		{ { "-uunix://:secret@/tmp/s", "-k", "k", "x" }, "secret" },
		{ { "status", "-u", "redis://:secret@h", "a" }, "secret" },
		{ { "-u", "redis://:se/cret@h", "-k", "k", "x" }, "se/cret" },
	};
	char err[4096];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct rlock_opts o;
		char **av;
		int argc, j, leaked = 0, kept;

		av = make_argv(rows[i].w, &argc);
		(void)parse_captured(argc, av, &o, err, sizeof(err));
		for (j = 0; j < argc; j++)
			if (strstr(av[j], rows[i].secret))
				leaked = 1;
		kept = o.nurls && strstr(o.urls[o.nurls - 1],
		    rows[i].secret) != NULL;
		CHECK(!leaked && kept && strstr(err, rows[i].secret) == NULL,
		    "cli: password blanked from argv (%s), kept for use",
		    rows[i].w[0]);
		cli_free(&o);
		free_argv(av);
	}
}

static const struct env_row {
	const char *name;
	const char *rlock_url, *redis_url, *rlock_pw, *cli_auth;
	int use_u;
	const char *url, *pw;
	int status;
	const char *msg;
} ENV_ROWS[] = {
	{ "default URL", NULL, NULL, NULL, NULL, 0,
	    "redis://127.0.0.1:6379/0", NULL },
	{ "REDIS_URL", NULL, "redis://b", NULL, NULL, 0, "redis://b",
	    NULL },
	{ "RLOCK_URL beats REDIS_URL", "redis://a", "redis://b", NULL,
	    NULL, 0, "redis://a", NULL },
	{ "empty RLOCK_URL ignored", "", "redis://b", NULL, NULL, 0,
	    "redis://b", NULL },
	{ "-u beats RLOCK_URL", "redis://a", NULL, NULL, NULL, 1,
	    "redis://cli", NULL },
	{ "REDISCLI_AUTH", NULL, NULL, NULL, "p2", 0, NULL, "p2" },
	{ "RLOCK_PASSWORD beats REDISCLI_AUTH", NULL, NULL, "p1", "p2",
	    0, NULL, "p1" },
	{ "empty RLOCK_PASSWORD ignored", NULL, NULL, "", "p2", 0,
	    NULL, "p2" },
	{ "bad RLOCK_URL is a usage error", "redis://h:x", NULL, NULL,
	    NULL, 0, NULL, NULL, RL_EXIT_USAGE, "(RLOCK_URL)" },
	{ "bad REDIS_URL is a usage error", NULL, "http://h", NULL,
	    NULL, 0, NULL, NULL, RL_EXIT_USAGE, "(REDIS_URL)" },
	{ "good -u hides bad RLOCK_URL", "redis://h:x", NULL, NULL,
	    NULL, 1, "redis://cli", NULL },
};

static void
test_cli_env(void)
{
	static const char *words[] = { "-k", "k", "x", NULL };
	static const char *words_u[] = { "-u", "redis://cli", "-k", "k", "x",
	    NULL };
	char err[4096];
	size_t i;

	for (i = 0; i < sizeof(ENV_ROWS) / sizeof(ENV_ROWS[0]); i++) {
		const struct env_row *e = &ENV_ROWS[i];
		struct rlock_opts o;
		char **av;
		int argc, st;

#define SETENV(n, v)	((v) ? setenv((n), (v), 1) : unsetenv(n))
		SETENV("RLOCK_URL", e->rlock_url);
		SETENV("REDIS_URL", e->redis_url);
		SETENV("RLOCK_PASSWORD", e->rlock_pw);
		SETENV("REDISCLI_AUTH", e->cli_auth);
#undef SETENV
		av = make_argv(e->use_u ? words_u : words, &argc);
		st = parse_captured(argc, av, &o, err, sizeof(err));
		if (e->status)
			CHECK(st == e->status && error_shape_ok(err, 0) &&
			    strstr(err, e->msg), "cli env: %s", e->name);
		else
			CHECK(st == 0 && (e->url == NULL ||
			    STREQ(o.urls[o.nurls - 1], e->url)) &&
			    STREQ(o.password, e->pw),
			    "cli env: %s", e->name);
		cli_free(&o);
		free_argv(av);
	}
	unsetenv("RLOCK_URL");
	unsetenv("REDIS_URL");
	unsetenv("RLOCK_PASSWORD");
	unsetenv("REDISCLI_AUTH");
}

static void
test_cli_password_file(void)
{
	static const char *words[] = { "--password-file", NULL, "-k", "k",
	    "x", NULL };
	char path[] = "/tmp/rlock-unit-XXXXXX", err[4096];
	struct rlock_opts o;
	char **av;
	int fd, argc, st;

	if ((fd = mkstemp(path)) < 0) {
		CHECK(0, "cli: mkstemp for --password-file");
		return;
	}
	(void)!write(fd, "pw\r\nsecond line\n", 16);
	close(fd);
	words[1] = path;
	setenv("RLOCK_PASSWORD", "fromenv", 1);
	av = make_argv(words, &argc);
	st = parse_captured(argc, av, &o, err, sizeof(err));
	CHECK(st == 0 && STREQ(o.password, "pw") && o.password_from_file &&
	    err[0] == '\0',
	    "cli: --password-file: first line, CRLF cut, beats the env");
	cli_free(&o);
	free_argv(av);
	unsetenv("RLOCK_PASSWORD");
	unlink(path);
}

/*
 * Cut to CMDLINE_MAX bytes, "..." last, never inside a UTF-8 sequence:
 * the command line "x " + pad * 'a' + "\xc3\xa9tail" (8 + pad bytes).
 */
static void
test_cli_command_line_cut(void)
{
	static const struct { size_t pad, len; const char *end; } rows[] = {
		{ CMDLINE_MAX - 8, CMDLINE_MAX, "\xc3\xa9tail" },	/* fits */
		{ CMDLINE_MAX - 7, CMDLINE_MAX, "a\xc3\xa9..." },
		{ CMDLINE_MAX - 6, CMDLINE_MAX - 1, "aa..." },	/* not in é */
		{ CMDLINE_MAX - 5, CMDLINE_MAX, "aa..." },
		{ 100000, CMDLINE_MAX, "aa..." },
	};
	struct rlock_opts o;
	char *argv[3], *s, *big;
	size_t i, n, e;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		big = xmalloc(rows[i].pad + 7);
		memset(big, 'a', rows[i].pad);
		memcpy(big + rows[i].pad, "\xc3\xa9tail", 7);
		memset(&o, 0, sizeof(o));
		argv[0] = (char *)"x";
		argv[1] = big;
		argv[2] = NULL;
		o.cmd = argv;
		s = cli_command_line(&o);
		n = strlen(s);
		e = strlen(rows[i].end);
		CHECK(n == rows[i].len && n >= e &&
		    strcmp(s + n - e, rows[i].end) == 0,
		    "cli_command_line, pad %zu: %zu bytes ending '%s' (got %zu)",
		    rows[i].pad, rows[i].len, rows[i].end, n);
		free(s);
		free(big);
	}
}

static void
test_cli_command_line(void)
{
	static const char *w1[] = { "-k", "k", "echo", "a b", "c", NULL };
	static const char *w2[] = { "-k", "k", "-c", "echo hi | wc", NULL };
	char err[4096], *s;
	struct rlock_opts o;
	char **av;
	int argc;

	av = make_argv(w1, &argc);
	(void)parse_captured(argc, av, &o, err, sizeof(err));
	s = cli_command_line(&o);
	CHECK(strcmp(s, "echo a b c") == 0, "cli_command_line of argv");
	free(s);
	cli_free(&o);
	free_argv(av);

	av = make_argv(w2, &argc);
	(void)parse_captured(argc, av, &o, err, sizeof(err));
	s = cli_command_line(&o);
	CHECK(strcmp(s, "echo hi | wc") == 0, "cli_command_line of -c");
	free(s);
	cli_free(&o);
	free_argv(av);
	test_cli_command_line_cut();
}

/* ---------------------------------------------------------------- keys */

/*
 * KEY -> its name under "rlock:"; every name's Cluster hash tag (first
 * '{' to the first '}' after it) must be non-empty and end inside P{KEY},
 * and the name must parse back to KEY.
 */
static const struct { const char *key, *name; } KEY_ROWS[] = {
	{ "deploy", "rlock:{deploy}" },
	{ "}x", "rlock:{\\}x}" },
	{ "}", "rlock:{\\}}" },
	{ "\\y", "rlock:{\\\\y}" },
	{ "\\}", "rlock:{\\\\}}" },
	{ "{x", "rlock:{{x}" },
	{ "x}", "rlock:{x}}" },
	{ "{}", "rlock:{{}}" },
	{ "}{", "rlock:{\\}{}" },
	{ "a\\", "rlock:{a\\}" },
};

static void
test_keys(void)
{
	const char *back, *b, *e;
	size_t i, len, kl;
	char *n, *sem;

	for (i = 0; i < sizeof(KEY_ROWS) / sizeof(KEY_ROWS[0]); i++) {
		const char *k = KEY_ROWS[i].key;

		n = keys_name("rlock:", k, strlen(k), "", &len);
		CHECK(strcmp(n, KEY_ROWS[i].name) == 0 && len == strlen(n),
		    "keys_name '%s' = '%s' (got '%s')", k, KEY_ROWS[i].name,
		    n);
		b = strchr(n, '{');
		e = strchr(b, '}');
		CHECK(e > b + 1 && (size_t)(e - n) < len,
		    "'%s': a non-empty hash tag", n);
		back = keys_parse("rlock:", n, len, "", &kl);
		CHECK(back && kl == strlen(k) && memcmp(back, k, kl) == 0,
		    "keys_parse '%s' gives '%s' back", n, k);
		free(n);
		sem = keys_name("rlock:", k, strlen(k), ":sem", &len);
		back = keys_parse("rlock:", sem, len, ":sem", &kl);
		CHECK(back && kl == strlen(k) && keys_parse("rlock:", sem,
		    len, "", &kl) == NULL, "'%s' is a :sem name only", sem);
		free(sem);
	}
	/* Names rlock never writes: not a lock of ours. */
	CHECK(keys_parse("rlock:", "rlock:{}x}", 10, "", &kl) == NULL,
	    "rlock:{}x} (unmarked '}') is not a lock name");
	CHECK(keys_parse("rlock:", "rlock:{\\x}", 10, "", &kl) == NULL,
	    "rlock:{\\x} (a mark before an ordinary KEY) is not");
	CHECK(keys_parse("rlock:", "rlock:{}", 8, "", &kl) == NULL,
	    "rlock:{} (empty KEY) is not");
	CHECK(keys_parse("rlock:", "rlock:{x}:meta", 14, "", &kl) == NULL,
	    "a helper key is not a lock name");
	CHECK(keys_bad_prefix("a{}") && keys_bad_prefix("{}") &&
	    !keys_bad_prefix("rlock:") && !keys_bad_prefix("a{b}") &&
	    !keys_bad_prefix("a{"), "keys_bad_prefix");
}

/* ---------------------------------------------------------------- ACL */

/* A refusal in Redis's or our scripts' words -> the line and its cure. */
static const struct {
	const char *err, *prefix, *user;
	const char *line;	/* NULL: not a refusal */
	const char *cure;	/* NULL: none */
} ACL_ROWS[] = {
	{ "NOPERM this user has no permissions to run the 'blpop' command",
	    "rlock:", "app", "the ACL user lacks +blpop, for BLPOP",
	    "add it: ACL SETUSER app +blpop (" },
	{ "NOPERM this user has no permissions to run the 'cluster|slots' "
	    "command", "rlock:", "app", "the ACL user lacks +cluster|slots, "
	    "for CLUSTER|SLOTS", "ACL SETUSER app +cluster|slots (" },
	{ "NOPERM this user has no permissions to access one of the keys "
	    "used as arguments", "jobs:", NULL, "the ACL user lacks ~jobs:*, "
	    "for rlock's keys", "add it: ACL SETUSER default ~jobs:* (" },
	{ "NOPERM this user has no permissions to access one of the channels "
	    "used as arguments", "rlock:", "app", "the ACL user lacks "
	    "&rlock:*, for rlock's channels", "ACL SETUSER app &rlock:* (" },
	{ "RLOCK_NOPERM +spublish", "rlock:", "app", "the ACL user lacks "
	    "+spublish, for SPUBLISH", "add it: ACL SETUSER app +spublish (" },
	{ "RLOCK_NOPERM ~ rlock:{a b}:tok BLPOP", "rlock:", "app",
	    "the ACL user lacks ~rlock:*, for BLPOP on key rlock:{a b}:tok",
	    "add it: ACL SETUSER app ~rlock:* (" },
	{ "RLOCK_NOPERM & rlock:{k\n}:wake SPUBLISH", "rlock:", "a\nb",
	    "the ACL user lacks &rlock:* or +spublish, for SPUBLISH on "
	    "channel rlock:{k\\x0a}:wake", "add them: ACL SETUSER a\\x0ab "
	    "&rlock:* +spublish (" },
	{ "ERR The user executing the script can't run this command or "
	    "subcommand script: 3b0b, on @user_script:25.", "rlock:", "app",
	    "the ACL user lacks a command one of rlock's scripts runs",
	    "see \"A Redis user for rlock\" in rlock(1)" },
	{ "ERR The user executing the script can't access at least one of the "
	    "keys mentioned in the command arguments script: 1, on "
	    "@user_script:1.", "rlock:", "app", "the ACL user lacks ~rlock:*",
	    "ACL SETUSER app ~rlock:*" },
	{ "ERR Error running script (call to f_1): @user_script:9: NOPERM "
	    "this user has no permissions to run the 'publish' command",
	    "rlock:", "app", "the ACL user lacks +publish, for PUBLISH",
	    "ACL SETUSER app +publish (" },
	{ "WRONGPASS invalid username-password pair", "rlock:", "app", NULL,
	    NULL },
	{ "RLOCK_MODE the key is in use as a mutex", "rlock:", "app", NULL,
	    NULL },
	{ "ERR unknown command 'SPUBLISH'", "rlock:", "app", NULL, NULL },
};

static void
test_acl(void)
{
	char line[512], rule[96];
	const char *cure;
	size_t i;

	for (i = 0; i < sizeof(ACL_ROWS) / sizeof(ACL_ROWS[0]); i++) {
		acl_set_prefix(ACL_ROWS[i].prefix);
		if (ACL_ROWS[i].line == NULL) {
			CHECK(!acl_is_refusal(ACL_ROWS[i].err),
			    "acl: '%.40s' is no refusal", ACL_ROWS[i].err);
			continue;
		}
		acl_explain(ACL_ROWS[i].err, line, sizeof(line), rule,
		    sizeof(rule));
		cure = acl_cure(rule, ACL_ROWS[i].user);
		CHECK(acl_is_refusal(ACL_ROWS[i].err) &&
		    strncmp(line, ACL_ROWS[i].line, strlen(ACL_ROWS[i].line)) ==
		    0 && cure && strstr(cure, ACL_ROWS[i].cure) &&
		    !strchr(line, '\n') && !strchr(cure, '\n'),
		    "acl row %zu -> '%s'; '%s'", i, line,
		    cure ? cure : "(none)");
	}
	CHECK(strstr(acl_cure("", "app"), "in rlock(1)") != NULL,
	    "acl: a refusal that names nothing points at rlock(1)");
	acl_set_prefix("rlock:");
}

/* ---------------------------------------------------------------- TLS */

/* --tls and its files from argv and the environment. */
static const struct tls_row {
	const char *name;
	const char *argv[MAXARGV];
	const char *env_ca, *env_cert, *env_key;
	int on, forced, insecure;
	const char *cacert, *cacert_src, *cert, *cert_src, *key, *key_src;
	const char *sni;
} TLS_ROWS[] = {
	{ "plain redis:// is no TLS", { "-u", "redis://h", "-k", "k", "x" },
	    .on = 0 },
	{ "rediss:// turns TLS on", { "-u", "rediss://h", "-k", "k", "x" },
	    .on = 1 },
	{ "--tls turns it on for redis://", { "--tls", "-u", "redis://h",
	    "-k", "k", "x" }, .on = 1, .forced = 1 },
	{ "rediss+cluster:// turns it on", { "-u", "rediss+cluster://a,b",
	    "-k", "k", "x" }, .on = 1 },
	{ "every option", { "-u", "rediss://h", "--tls-cacert", "ca",
	    "--tls-cert", "c", "--tls-key", "k", "--tls-sni", "n",
	    "--tls-insecure", "-k", "k", "x" }, .on = 1, .insecure = 1,
	    .cacert = "ca", .cert = "c", .key = "k", .sni = "n" },
	{ "the environment's files", { "-u", "rediss://h", "-k", "k", "x" },
	    "eca", "ecert", "ekey", .on = 1, .cacert = "eca",
	    .cacert_src = "RLOCK_TLS_CACERT", .cert = "ecert",
	    .cert_src = "RLOCK_TLS_CERT", .key = "ekey",
	    .key_src = "RLOCK_TLS_KEY" },
	{ "options beat the environment", { "-u", "rediss://h",
	    "--tls-cacert", "ca", "--tls-cert", "c", "-k", "k", "x" },
	    "eca", "ecert", "ekey", .on = 1, .cacert = "ca", .cert = "c" },
	{ "--tls-cacertdir beats RLOCK_TLS_CACERT", { "-u", "rediss://h",
	    "--tls-cacertdir", "d", "-k", "k", "x" }, "eca", .on = 1 },
	{ "a key from the environment with its certificate only",
	    { "-u", "rediss://h", "-k", "k", "x" }, NULL, NULL, "ekey",
	    .on = 1 },
	{ "after a subcommand", { "status", "--tls", "--tls-cacert", "ca",
	    "-u", "redis://h", "K" }, .on = 1, .forced = 1, .cacert = "ca" },
	{ "before a subcommand", { "--tls-insecure", "-u", "rediss://h",
	    "list" }, .on = 1, .insecure = 1 },
	{ "--redlock with one rediss:// master", { "--redlock", "-u",
	    "redis://a", "-u", "redis://b", "-u", "rediss://c", "-k", "k",
	    "x" }, .on = 1 },
};

static void
test_cli_tls(void)
{
	char err[4096];
	size_t i;

	for (i = 0; i < sizeof(TLS_ROWS) / sizeof(TLS_ROWS[0]); i++) {
		const struct tls_row *r = &TLS_ROWS[i];
		const struct tls_cfg *t;
		struct rlock_opts o;
		char **av;
		int argc, st;

#define SETENV(n, v)	((v) ? setenv((n), (v), 1) : unsetenv(n))
		SETENV("RLOCK_TLS_CACERT", r->env_ca);
		SETENV("RLOCK_TLS_CERT", r->env_cert);
		SETENV("RLOCK_TLS_KEY", r->env_key);
#undef SETENV
		av = make_argv(r->argv, &argc);
		st = parse_captured(argc, av, &o, err, sizeof(err));
		t = &o.tls;
		CHECK(st == 0 && err[0] == '\0' && t->on == r->on &&
		    o.tls_forced == r->forced && t->insecure == r->insecure &&
		    STREQ(t->cacert, r->cacert) &&
		    STREQ(t->cacert_src, r->cacert_src) &&
		    STREQ(t->cert, r->cert) && STREQ(t->cert_src, r->cert_src) &&
		    STREQ(t->key, r->key) && STREQ(t->key_src, r->key_src) &&
		    STREQ(t->sni, r->sni), "cli tls: %s (status %d)", r->name,
		    st);
		if (st != 0)
			DIAG("stderr was: %s", err);
		cli_free(&o);
		free_argv(av);
	}
	unsetenv("RLOCK_TLS_CACERT");
	unsetenv("RLOCK_TLS_CERT");
	unsetenv("RLOCK_TLS_KEY");
}

/* tls_setup's refusals: 64, one line naming the file and the option. */
static void
test_tls_setup(void)
{
	static const struct {
		const char *name;
		struct tls_cfg cfg;
		const char *msg;
	} rows[] = {
		{ "missing CA file", { .on = 1, .cacert = "/nonexistent/ca" },
		    "cannot read --tls-cacert /nonexistent/ca: No such file" },
		{ "CA file that is a directory", { .on = 1, .cacert = "/" },
		    "cannot read --tls-cacert /: Is a directory" },
		{ "CA file with no certificate", { .on = 1,
		    .cacert = "/dev/null" }, "--tls-cacert /dev/null holds no "
		    "usable CA certificate" },
		{ "CA file from the environment", { .on = 1,
		    .cacert = "/nonexistent/ca", .cacert_src =
		    "RLOCK_TLS_CACERT" }, "cannot read RLOCK_TLS_CACERT "
		    "/nonexistent/ca" },
		{ "missing CA directory", { .on = 1,
		    .cacertdir = "/nonexistent/d" }, "cannot read "
		    "--tls-cacertdir /nonexistent/d" },
		{ "missing client certificate", { .on = 1,
		    .cert = "/nonexistent/c" }, "cannot read --tls-cert "
		    "/nonexistent/c" },
		{ "client certificate that is not PEM", { .on = 1,
		    .cert = "/dev/null" }, "--tls-cert /dev/null holds no "
		    "usable certificate" },
		{ "key without certificate", { .on = 1, .key = "/dev/null" },
		    "--tls-key /dev/null without a client certificate" },
	};
	char err[512];
	size_t i;
	int st;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		st = tls_setup(&rows[i].cfg, err, sizeof(err));
		CHECK(st == RL_EXIT_USAGE && strstr(err, rows[i].msg) &&
		    strchr(err, '\n') == NULL && !tls_ready(), "tls_setup: "
		    "%s: 64, '%s' (got %d: %s)", rows[i].name, rows[i].msg, st,
		    err);
	}
	CHECK(tls_setup(&(struct tls_cfg){ .on = 1 }, err, sizeof(err)) == 0 &&
	    tls_ready(), "tls_setup: the system CA store");
	tls_teardown();
	CHECK(!tls_ready(), "tls_teardown");
}

static const struct { const char *bytes; size_t len; int tls; }
TLS_LOOK_ROWS[] = {
	{ "\x15\x03\x03\x00\x02", 5, 1 },	/* an alert */
	{ "\x16\x03\x01", 3, 1 },		/* a handshake */
	{ "\x16", 1, 1 },
	{ "-ERR Protocol error", 19, 0 },
	{ "+PONG", 5, 0 },
	{ "\x16\x01", 2, 0 },
	{ "", 0, 0 },
};

/*
 * A fake peer on a loopback port, in a child: how it treats each
 * connection. 's' silent (reads, never answers), 'c' closes at once, 'r'
 * as a plain Redis (answers "-ERR" to a request that ends in a newline,
 * silent to our NUL-filled hello), 'a' a TLS alert at once.
 */
static pid_t
fake_peer(char how, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c;
	char buf[4096];
	ssize_t n;
	pid_t pid;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)sa, len) < 0 ||
	    listen(ls, 8) < 0 || getsockname(ls, (struct sockaddr *)sa,
	    &len) < 0)
		return -1;
	if ((pid = fork()) != 0) {
		close(ls);
		return pid;
	}
	alarm(20);
	while ((c = accept(ls, NULL, NULL)) >= 0) {
		if (how == 'c') {
			close(c);
			continue;
		}
		if (how == 'a') {
			(void)!write(c, "\x15\x03\x03\x00\x02\x02\x28", 7);
			continue;
		}
		if (fork() == 0) {
			while ((n = read(c, buf, sizeof(buf))) > 0)
				if (how == 'r' && memchr(buf, '\n', (size_t)n) &&
				    !memchr(buf, '\0', (size_t)n))
					(void)!write(c, "-ERR Protocol error\r\n",
					    21);
			_exit(0);
		}
		close(c);
	}
	_exit(0);
}

/* Connect to the fake peer, non-blocking, and shake hands with it. */
static int
handshake_with(char how, int64_t budget, char *err, size_t errlen,
    int64_t *took)
{
	struct sockaddr_in sa;
	struct tls_session *s;
	int fd, st = -1;
	pid_t pid;

	if ((pid = fake_peer(how, &sa)) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    fcntl(fd, F_SETFL, O_NONBLOCK) == 0) {
		*took = mono_ms();
		s = tls_handshake(fd, "localhost", *took + budget, &st, err,
		    errlen);
		*took = mono_ms() - *took;
		if (s) {
			tls_free(s);
			st = 0;
		}
	}
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return st;
}

static void
test_tls_handshake(void)
{
	static const struct {
		char how;
		const char *name, *msg;
	} rows[] = {
		{ 'r', "a plain-text Redis port", "(rediss:// or --tls against "
		    "a plain Redis port); use redis://" },
		{ 's', "a server that never answers the hello", "no handshake "
		    "within --connect-timeout" },
		{ 'c', "a server that closes at once", "the connection in "
		    "the handshake" },
	};
	struct tls_cfg cfg = { .on = 1 };
	/* The fake peer runs under valgrind too in make valgrind. */
	int64_t budget = getenv("RLOCK_UNDER_VALGRIND") ? 3000 : 600;
	char err[512];
	int64_t took = 0;
	size_t i;
	int st;

	for (i = 0; i < sizeof(TLS_LOOK_ROWS) / sizeof(TLS_LOOK_ROWS[0]);
	    i++)
		CHECK(tls_looks_like_tls((const unsigned char *)
		    TLS_LOOK_ROWS[i].bytes, TLS_LOOK_ROWS[i].len) ==
		    TLS_LOOK_ROWS[i].tls, "tls_looks_like_tls row %zu", i);
	if (tls_setup(&cfg, err, sizeof(err)) != 0) {
		CHECK(0, "tls_setup: %s", err);
		return;
	}
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		st = handshake_with(rows[i].how, budget, err, sizeof(err),
		    &took);
		/* Within the deadline (the probe answers at half time). */
		CHECK(st == RL_EXIT_UNAVAILABLE && strstr(err, rows[i].msg) &&
		    took <= budget + budget / 2, "tls_handshake: %s: 69, '%s' "
		    "within the deadline (got %d after %lldms: %s)",
		    rows[i].name, rows[i].msg, st, (long long)took, err);
	}
	tls_teardown();
}

/* tls_probe: a TLS alert says TLS; silence, a close or "-ERR" do not. */
static void
test_tls_probe(void)
{
	static const struct { char how; int yes; } rows[] = {
		{ 'a', 1 }, { 'r', 0 }, { 'c', 0 }, { 's', 0 },
	};
	struct sockaddr_in sa;
	size_t i;
	pid_t pid;
	int yes;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if ((pid = fake_peer(rows[i].how, &sa)) < 0)
			continue;
		yes = tls_probe((struct sockaddr *)&sa, sizeof(sa),
		    mono_ms() + (getenv("RLOCK_UNDER_VALGRIND") ? 3000 : 300));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK(yes == rows[i].yes, "tls_probe: peer '%c' is %sTLS",
		    rows[i].how, rows[i].yes ? "" : "not ");
	}
}

/* A loopback port that listens (never accepting: the kernel keeps what
 * comes, up to backlog connections) or, closed, refuses. */
static int
listen_loopback(struct sockaddr_in *sa, int keep, int backlog)
{
	socklen_t len = sizeof(*sa);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)sa, len) < 0 ||
	    listen(ls, backlog) < 0 ||
	    getsockname(ls, (struct sockaddr *)sa, &len) < 0) {
		if (ls >= 0)
			close(ls);
		return -1;
	}
	if (!keep) {
		close(ls);
		return 0;
	}
	return ls;
}

/* A TCP endpoint at sa (host: "127.0.0.1", the caller's buffer). */
static void
loopback_cfg(struct conn_cfg *cfg, char *host, const struct sockaddr_in *sa)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ep.kind = EP_TCP;
	cfg->ep.host = host;
	cfg->ep.port = ntohs(sa->sin_port);
	cfg->connect_timeout_ms = 400;
}

/*
 * conn_connect_start starts only what conn_connect_started can finish (an
 * address, no TLS or SELECT); conn_connect uses that connect (and waits
 * for the login: nobody answers it here), and one that failed is tried
 * again as usual and named.
 */
static void
test_conn_connect_start(void)
{
	static const struct { const char *host; int tls, db, open, early;
	    const char *why; } rows[] = {
		{ "127.0.0.1", 0, 0, 1, 1, "PING: no answer within 100ms" },
		{ "127.0.0.1", 1, 0, 1, 0, NULL },
		{ "127.0.0.1", 0, 2, 1, 0, NULL },
		{ "localhost", 0, 0, 1, 0, NULL },
		{ "127.0.0.1", 0, 0, 0, -1, "refused" },
	};
	struct sockaddr_in sa;
	struct conn_cfg cfg;
	struct conn *cn;
	char host[16];
	size_t i;
	int ls, early, st;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if ((ls = listen_loopback(&sa, rows[i].open, 4)) < 0) {
			CHECK(0, "conn_connect_start: a loopback port");
			continue;
		}
		snprintf(host, sizeof(host), "%s", rows[i].host);
		loopback_cfg(&cfg, host, &sa);
		cfg.connect_timeout_ms = 100;
		cfg.ep.tls = rows[i].tls;
		cfg.ep.db = rows[i].db;
		cn = conn_new(&cfg, 100);
		early = conn_connect_start(cn, mono_ms() + 300);
		/* Only the rows that connect for real: no TLS, no SELECT
		 * to a socket that never answers. */
		st = rows[i].why ? conn_connect(cn, NULL, 0, mono_ms() + 100) :
		    -1;
		CHECK((rows[i].early < 0 || early == rows[i].early) &&
		    (rows[i].why == NULL || (st == RL_EXIT_UNAVAILABLE &&
		    strstr(conn_failure(cn)->why, rows[i].why))),
		    "conn_connect_start: %s, tls %d, db %d, %s: early %d, "
		    "connect %d (%s)", rows[i].host, rows[i].tls, rows[i].db,
		    rows[i].open ? "listening" : "closed", early, st,
		    conn_failure(cn)->why);
		conn_free(cn);
		if (ls > 0)
			close(ls);
	}
}

/*
 * conn_connect_started: connects started together end together, and the
 * logins overlap. Two connects stalled (a listener whose queue is full
 * drops the SYNs) and two logins nobody answers (a listener that takes
 * the connects and never reads) cost one deadline in all, not one each,
 * and each failure is named as conn_connect names it.
 */
static void
test_conn_connect_started(void)
{
	static const char *const why[] = { "timed out", "timed out",
	    "PING: no answer within 400ms", "PING: no answer within 400ms" };
	struct sockaddr_in sa, ok;
	struct conn_cfg cfg, okcfg;
	struct conn *cn[4];
	char host[] = "127.0.0.1";
	int64_t t0, took;
	int ls, lok, fill, st[4], i, early = 0;

	ls = listen_loopback(&sa, 1, 0);
	lok = listen_loopback(&ok, 1, 4);
	fill = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || lok < 0 || fill < 0 ||
	    connect(fill, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		CHECK(0, "conn_connect_started: a listener with a full queue");
		return;
	}
	loopback_cfg(&cfg, host, &sa);
	loopback_cfg(&okcfg, host, &ok);
	t0 = mono_ms();
	for (i = 0; i < 4; i++) {
		cn[i] = conn_new(i < 2 ? &cfg : &okcfg, 400);
		early += conn_connect_start(cn[i], t0 + 400);
	}
	conn_connect_started(cn, 4, st);
	took = mono_ms() - t0;
	CHECK(early == 4 && took >= 350 && took < 750,
	    "conn_connect_started: all end together (%d started, %lldms)",
	    early, (long long)took);
	for (i = 0; i < 4; i++) {
		CHECK(st[i] == RL_EXIT_UNAVAILABLE && conn_fd(cn[i]) < 0 &&
		    strstr(conn_failure(cn[i])->why, why[i]),
		    "conn_connect_started: %d: %d (%s)", i, st[i],
		    conn_failure(cn[i])->why);
		conn_free(cn[i]);
	}
	close(fill);
	close(lok);
	close(ls);
}

/* --------------------------------------------------------------- glob */

/*
 * Every row with a closed pattern was checked against Redis 7's KEYS; an
 * unclosed class, which Redis closes at the end, matches nothing here:
 * glob_valid refuses such a PATTERN before it is used.
 */
static const struct { const char *p, *s; int match; } GLOB_ROWS[] = {
	{ "*", "", 1 },
	{ "*", "anything", 1 },
	{ "a*", "abc", 1 },
	{ "a*", "bac", 0 },
	{ "*c", "abc", 1 },
	{ "a*c", "ac", 1 },
	{ "a**c", "abbc", 1 },
	{ "?", "", 0 },
	{ "?", "x", 1 },
	{ "a?c", "abc", 1 },
	{ "a?c", "ac", 0 },
	{ "[abc]", "b", 1 },
	{ "[abc]", "d", 0 },
	{ "[^abc]", "d", 1 },
	{ "[^abc]", "a", 0 },
	{ "[a-c]x", "bx", 1 },
	{ "[c-a]x", "bx", 1 },		/* a reversed range, as Redis */
	{ "[a-c]", "d", 0 },
	{ "[\\]]", "]", 1 },
	{ "[a\\-z]", "-", 1 },
	{ "x[]y", "x]y", 0 },		/* an empty class matches nothing */
	{ "\\*", "*", 1 },
	{ "\\*", "a", 0 },
	{ "\\?", "?", 1 },
	{ "a\\", "a\\", 1 },		/* a trailing backslash is literal */
	{ "deploy", "deploy", 1 },
	{ "dep", "deploy", 0 },
	{ "deploy", "dep", 0 },
	{ "", "", 1 },
	{ "", "a", 0 },
	{ "[abc", "a", 0 },
};

static const struct { const char *p; int valid; } GLOB_VALID_ROWS[] = {
	{ "", 1 },
	{ "deploy-*", 1 },
	{ "[abc]", 1 },
	{ "[]]", 1 },
	{ "a\\*", 1 },
	{ "a\\\\", 1 },
	{ "[abc", 0 },			/* would swallow "}*" */
	{ "[a-]", 0 },			/* a range up to ']': still open */
	{ "a\\", 0 },			/* would escape the "}" */
	{ "x[\\]", 0 },
};

static const struct { const char *prefix, *p, *want; } SCAN_MATCH_ROWS[] = {
	{ "rlock:", "*", "rlock:{*}*" },
	{ "rlock:", "dep[0-9]", "rlock:{dep[0-9]}*" },
	{ "", "x", "{x}*" },
	/* The prefix is literal: its glob characters are escaped. */
	{ "a*b?[c]\\{d}^-:", "x", "a\\*b\\?\\[c\\]\\\\\\{d\\}\\^\\-:{x}*" },
};

static void
test_glob(void)
{
	size_t i, len;
	char *m;

	for (i = 0; i < sizeof(GLOB_ROWS) / sizeof(GLOB_ROWS[0]); i++)
		CHECK(glob_match(GLOB_ROWS[i].p, strlen(GLOB_ROWS[i].p),
		    GLOB_ROWS[i].s, strlen(GLOB_ROWS[i].s)) ==
		    GLOB_ROWS[i].match, "glob_match '%s' '%s' -> %d",
		    GLOB_ROWS[i].p, GLOB_ROWS[i].s, GLOB_ROWS[i].match);
	/* Any bytes: a NUL in the key, a NUL in the pattern. */
	CHECK(glob_match("a?c", 3, "a\0c", 3) == 1, "glob_match: ? on a NUL");
	CHECK(glob_match("a\0*", 3, "a\0bc", 4) == 1,
	    "glob_match: a NUL in the pattern is literal");
	CHECK(glob_match("a\0*", 3, "abc", 3) == 0,
	    "glob_match: ... and only matches a NUL");
	for (i = 0; i < sizeof(GLOB_VALID_ROWS) / sizeof(GLOB_VALID_ROWS[0]);
	    i++)
		CHECK(glob_valid(GLOB_VALID_ROWS[i].p,
		    strlen(GLOB_VALID_ROWS[i].p)) == GLOB_VALID_ROWS[i].valid,
		    "glob_valid '%s' -> %d", GLOB_VALID_ROWS[i].p,
		    GLOB_VALID_ROWS[i].valid);
	for (i = 0; i < sizeof(SCAN_MATCH_ROWS) / sizeof(SCAN_MATCH_ROWS[0]);
	    i++) {
		m = glob_scan_match(SCAN_MATCH_ROWS[i].prefix,
		    SCAN_MATCH_ROWS[i].p, &len);
		CHECK(strcmp(m, SCAN_MATCH_ROWS[i].want) == 0 &&
		    len == strlen(SCAN_MATCH_ROWS[i].want),
		    "glob_scan_match '%s' '%s' -> '%s' (got '%s')",
		    SCAN_MATCH_ROWS[i].prefix, SCAN_MATCH_ROWS[i].p,
		    SCAN_MATCH_ROWS[i].want, m);
		free(m);
	}
}

int
main(void)
{
	unsetenv("RLOCK_URL");
	unsetenv("REDIS_URL");
	unsetenv("RLOCK_PASSWORD");
	unsetenv("REDISCLI_AUTH");
	unsetenv("POSIXLY_CORRECT");
	/* As rlock does (sig.c): OpenSSL writes to peers that hung up. */
	signal(SIGPIPE, SIG_IGN);
	test_dur_parse();
	test_dur_format();
	test_lease_park();
	test_lease_held();
	test_int_parse();
	test_url();
	test_url_multi();
	test_redirect();
	test_json();
	test_printable();
	test_glob();
	test_conn_format();
	test_reply_status();
	test_failure_kind();
	test_resolve();
	test_retry();
	test_cli_rows();
	test_cli_keys();
	test_cli_password_blanked();
	test_cli_env();
	test_cli_password_file();
	test_cli_command_line();
	test_acl();
	test_cli_tls();
	test_tls_setup();
	test_tls_handshake();
	test_tls_probe();
	test_conn_connect_start();
	test_conn_connect_started();
	test_keys();
	printf("1..%d\n", tests);
	if (fails)
		printf("# %d of %d failed\n", fails, tests);
	return fails ? 1 : 0;
}
