// SPDX-License-Identifier: MIT
/* Options to the lock's configuration, and connection messages. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "conn.h"
#include "exitcode.h"
#include "lease.h"
#include "tls.h"
#include "url.h"
#include "util.h"

/* One URL, as cli.c parsed it, to one config. */
static void
one_cfg(const struct rlock_opts *o, const struct endpoint *ep,
    struct conn_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	url_copy(&cfg->ep, ep);
	/* An explicit --password-file or environment password wins over
	 * none; a password in the URL wins over the environment. */
	cfg->password = o->password;
	if (cfg->ep.pass && !o->password_from_file)
		cfg->password = cfg->ep.pass;
	if (o->password_from_file)
		cfg->password_file = o->password_file;
	cfg->sentinel_password = getenv("RLOCK_SENTINEL_PASSWORD");
	cfg->connect_timeout_ms = o->connect_timeout_ms;
	/* --tls: every TCP connection; a unix socket stays on this host. */
	if (o->tls_forced && cfg->ep.kind != EP_UNIX)
		cfg->ep.tls = 1;
}

/* What to check when the server is not there, or not Redis. */
static const char *
check_url_hint(const struct lock_cfg *cfg)
{
	/* Short enough for hint_for()'s line; a long path is cut. */
	static char hint[90];

	if (cfg->url_from == NULL)
		return "check that Redis runs there, or give -u or RLOCK_URL";
	/* -u, RLOCK_URL, REDIS_URL or "url in FILE:LINE" */
	snprintf(hint, sizeof(hint), "check %s", cfg->url_from);
	return hint;
}

void
config_lock(const struct rlock_opts *o, struct lock_cfg *cfg)
{
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->url_from = o->url_from;
	acl_set_prefix(o->prefix);
	cfg->redlock = o->redlock;
	cfg->connect_timeout_ms = o->connect_timeout_ms;
	cfg->master_timeout_ms = lease_master_timeout_ms(o->lease_ms,
	    o->connect_timeout_ms);
	cfg->servers = xcalloc((size_t)o->neps, sizeof(*cfg->servers));
	for (i = 0; i < o->neps; i++)
		one_cfg(o, &o->eps[i], &cfg->servers[i]);
	cfg->n = o->neps;
}

/*
 * What to do about the answers whose cure is not where the status class
 * points: a full, read-only or out-of-memory server is not fixed by
 * checking -u. Matched on the start of Redis's own text (the error code,
 * and the words after an ERR). A refused permission (NOPERM, Redis 7's
 * script refusal) is FAIL_NOPERM, whose cure is acl_cure's.
 */
static const struct {
	const char *answer;
	const char *todo;
} HINTS[] = {
	{ "READONLY", "that server is a read-only replica; point -u at the "
	    "primary" },
	{ "OOM", "the server is out of memory; free some, or raise its "
	    "maxmemory" },
	{ "ERR max number of clients", "the server has as many clients as "
	    "its maxclients allows; retry later, or raise maxclients" },
	{ "ERR DB index is out of range", "the server has fewer databases "
	    "(its 'databases' setting); check the db in -u" },
	{ "LOADING", "the server is loading its data; retry in a moment" },
	{ "WRONGTYPE", "the lock's key holds another kind of value: a hash "
	    "there is most likely a Redisson lock (a Java service's getLock); "
	    "take that with --redisson, KEY its name" },
};

static const char *
hint_for(const struct lock_cfg *cfg, const struct failure *f, char *buf,
    size_t len)
{
	size_t i;

	if (f->kind == FAIL_NOT_REDIS) {
		snprintf(buf, len, "is a Redis server listening there? %s",
		    check_url_hint(cfg));
		return buf;
	}
	/* Not an error reply: said is "", and no answer matches. */
	for (i = 0; i < sizeof(HINTS) / sizeof(HINTS[0]); i++)
		if (strncmp(f->said, HINTS[i].answer,
		    strlen(HINTS[i].answer)) == 0)
			return HINTS[i].todo;
	return NULL;
}

void
config_report(const struct lock_cfg *cfg, const struct failure *f,
    int answered)
{
	char url[300], buf[128];
	const char *err = f->why, *todo;
	int tls = f->kind == FAIL_TLS || f->kind == FAIL_TLS_PLAIN;

	/* A refused permission (acl.c) comes with the ACL SETUSER for it. */
	todo = f->kind == FAIL_NOPERM ? acl_cure(f->acl_rule,
	    cfg->servers[0].ep.user) : hint_for(cfg, f, buf, sizeof(buf));
	if (cfg->redlock)
		snprintf(url, sizeof(url), "%d masters (--redlock)", cfg->n);
	else
		url_redacted(&cfg->servers[0].ep, url, sizeof(url));
	/*
	 * TLS's lines carry their own cure (tls.c), and a refusal there is
	 * ours of the server (or its of our certificate), not of a password.
	 * Once the server answered, the URL is right: no line sends the user
	 * to check it.
	 */
	if (tls)
		todo = NULL;
	else if (f->status == RL_EXIT_UNAVAILABLE && !todo && !answered)
		todo = check_url_hint(cfg);
	else if (f->status == RL_EXIT_NOPERM && !todo)
		todo = "check the user and password (URL, --password-file, "
		    "RLOCK_PASSWORD)";
	msg_err("%s%s%s: %s%s%s", f->status == RL_EXIT_UNAVAILABLE ?
	    "cannot reach " : "", url, f->status == RL_EXIT_NOPERM && !tls ?
	    " refused us" : "", err, todo ? "; " : "", todo ? todo : "");
}

int
config_start(const struct rlock_opts *o, char *err, size_t errlen)
{
	return o->tls.on ? tls_setup(&o->tls, err, errlen) : 0;
}

void
config_end(void)
{
	tls_teardown();
}

const char *
config_tls_library(void)
{
	return tls_library();
}
