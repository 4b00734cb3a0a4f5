// SPDX-License-Identifier: MIT
/*
 * The run mode's sequence, and the messages for its failures. It never
 * holds the lock when it returns an error: wait.c undoes uncertain
 * attempts, supervise.c releases.
 */
#include "run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "exitcode.h"
#include "guard.h"
#include "lock.h"
#include "sig.h"
#include "supervise.h"
#include "util.h"
#include "wait.h"

/* One URL to one config; 0 or 64 after the message. */
static int
one_cfg(const struct rlock_opts *o, const char *url, struct conn_cfg *cfg)
{
	const char *why = "";

	memset(cfg, 0, sizeof(*cfg));
	if (url_parse(url, &cfg->ep, &why) < 0) {
		size_t off, len;
		char *shown = xstrdup(url);

		if (url_password_span(shown, &off, &len) == 0)
			memset(shown + off, '*', len);
		msg_err("bad Redis URL '%s': %s", shown, why);
		free(shown);
		url_free(&cfg->ep);
		return RL_EXIT_USAGE;
	}
	/* An explicit --password-file or environment password wins over
	 * none; a password in the URL wins over the environment. */
	cfg->password = o->password;
	if (cfg->ep.pass && !o->password_from_file)
		cfg->password = cfg->ep.pass;
	cfg->sentinel_password = getenv("RLOCK_SENTINEL_PASSWORD");
	cfg->connect_timeout_ms = o->connect_timeout_ms;
	return 0;
}

/* Where the URL came from, for "check ..." in the messages. */
static const char *url_from;

/* What to check when the server is not there, or not Redis. */
static const char *
check_url_hint(void)
{
	if (url_from == NULL)
		return "check that Redis runs there, or give -u or RLOCK_URL";
	if (strcmp(url_from, "-u") == 0)
		return "check -u";
	return strcmp(url_from, "RLOCK_URL") == 0 ? "check RLOCK_URL" :
	    "check REDIS_URL";
}

int
run_conn_cfg(const struct rlock_opts *o, struct conn_cfg *cfg)
{
	int i, st;

	url_from = o->url_from;
	if (!o->redlock)
		return one_cfg(o, o->url, cfg);
	memset(cfg, 0, sizeof(*cfg));
	cfg->ep.kind = EP_QUORUM;
	cfg->ep.npeers = o->nurls;
	cfg->connect_timeout_ms = o->connect_timeout_ms;
	/* Redlock: each master's timeouts far below the lease, so one
	 * stalled master cannot eat the validity time of the rest. */
	cfg->peer_timeout_ms = o->lease_ms / 30;
	if (cfg->peer_timeout_ms < 50)
		cfg->peer_timeout_ms = 50;
	if (cfg->peer_timeout_ms > o->connect_timeout_ms)
		cfg->peer_timeout_ms = o->connect_timeout_ms;
	cfg->peers = xcalloc((size_t)o->nurls, sizeof(*cfg->peers));
	for (i = 0; i < o->nurls; i++) {
		if ((st = one_cfg(o, o->urls[i], &cfg->peers[i])) != 0) {
			run_conn_cfg_free(cfg);
			return st;
		}
		cfg->npeers = i + 1;
	}
	return 0;
}

void
run_conn_cfg_free(struct conn_cfg *cfg)
{
	int i;

	for (i = 0; i < cfg->npeers; i++)
		url_free(&cfg->peers[i].ep);
	free(cfg->peers);
	url_free(&cfg->ep);
	memset(cfg, 0, sizeof(*cfg));
}

/*
 * What to do about the answers whose cure is not where the status class
 * points: a NOPERM user got in, so its password is fine; a full, read-only
 * or out-of-memory server is not fixed by checking -u. Matched on the
 * start of Redis's own text (the error code), or on conn.c's words for a
 * peer that does not speak Redis.
 */
#define NOPERM_TODO "give that user the permission Redis names (ACL " \
	"SETUSER; rlock needs +@scripting, the commands its scripts call, and " \
	"its --prefix keys and channels)"

static const struct {
	const char *answer;
	const char *todo;
} HINTS[] = {
	{ "NOPERM", NOPERM_TODO },
	{ SCRIPT_ACL_DENIED, NOPERM_TODO },
	{ "READONLY", "that server is a read-only replica; point -u at the "
	    "primary" },
	{ "OOM", "the server is out of memory; free some, or raise its "
	    "maxmemory" },
	{ "ERR max number of clients", "the server has as many clients as "
	    "its maxclients allows; retry later, or raise maxclients" },
	{ "ERR DB index is out of range", "the server has fewer databases "
	    "(its 'databases' setting); check the db in -u" },
	{ "LOADING", "the server is loading its data; retry in a moment" },
};

static const char *
hint_for(const char *err, char *buf, size_t len)
{
	const char *ans = strstr(err, "Redis answered: ");
	size_t i;

	if (strstr(err, CONN_NOT_REDIS) != NULL) {
		snprintf(buf, len, "is a Redis server listening there? %s",
		    check_url_hint());
		return buf;
	}
	if (ans == NULL)
		return NULL;
	ans += strlen("Redis answered: ");
	for (i = 0; i < sizeof(HINTS) / sizeof(HINTS[0]); i++)
		if (strncmp(ans, HINTS[i].answer,
		    strlen(HINTS[i].answer)) == 0)
			return HINTS[i].todo;
	return NULL;
}

void
run_report_conn_error(const struct conn_cfg *cfg, int status,
    const char *err)
{
	char url[300], buf[128];
	const char *todo = hint_for(err, buf, sizeof(buf));

	url_redacted(&cfg->ep, url, sizeof(url));
	switch (status) {
	case RL_EXIT_UNAVAILABLE:
		msg_err("cannot reach %s: %s; %s", url, err,
		    todo ? todo : check_url_hint());
		break;
	case RL_EXIT_NOPERM:
		msg_err("%s refused us: %s; %s", url, err, todo ? todo :
		    "check the user and password (URL, --password-file, "
		    "RLOCK_PASSWORD)");
		break;
	default:
		msg_err("%s: %s%s%s", url, err, todo ? "; " : "",
		    todo ? todo : "");
		break;
	}
}

/*
 * A nested rlock of the KEY its ancestor holds: if Redis confirms the
 * inherited token holds KEY now, run COMMAND at once (the ancestor renews
 * and releases). A KEY that is free or held by others is not re-entered.
 */
static int
try_reenter(struct rlock_opts *o, struct conn *cn, int *status)
{
	const char *token = getenv("RLOCK_TOKEN"), *key = getenv("RLOCK_KEY");
	struct lock_ctx ctx;
	int ours;

	if (token == NULL || key == NULL || strcmp(key, o->key) != 0 ||
	    strlen(token) != 36)
		return 0;
	lock_ctx_init(&ctx, o->prefix, o->key, o->lease_ms, o->limit, 0, token,
	    xstrdup(""));
	ours = lock_is_ours(cn, &ctx);
	lock_ctx_free(&ctx);
	if (ours < 0) {
		*status = cn->status;
		run_report_conn_error(cn->cfg, cn->status, cn->err);
		return 1;
	}
	if (ours == 0)
		return 0;
	msg_verbose("'%s' is already held by our ancestor: re-entering",
	    o->key);
	conn_close(cn);
	*status = sup_exec_here(o);
	return 1;
}

static int
not_obtained(const struct rlock_opts *o, struct conn *cn,
    const struct lock_ctx *ctx)
{
	char who[256], wait[32], key[96];

	if (msg_level >= MSG_NORMAL) {
		printable(o->key, strlen(o->key), key, sizeof(key));
		if (o->limit > 1)
			snprintf(who, sizeof(who), "all of its %ld holders "
			    "(--limit %ld)", o->limit, o->limit);
		else
			lock_describe_holder(cn, &ctx->k, who, sizeof(who));
		if (o->wait_ms == 0) {
			msg_err("'%s' is held by %s; not waiting (--nonblock)",
			    key, who);
		} else {
			dur_format(o->wait_ms, wait, sizeof(wait));
			msg_err("'%s' is still held by %s after --timeout %s",
			    key, who, wait);
		}
	}
	return o->conflict_exit;
}

/*
 * --timeout bounds the whole wait, connecting included: until the lock is
 * ours, no connect or command may take longer than the wait (a shorter
 * --connect-timeout still wins). Holding the lock, releasing it and the
 * renewals have the full --connect-timeout again.
 */
static int
wait_bound(const struct rlock_opts *o)
{
	return o->wait_ms > 0 && o->wait_ms < o->connect_timeout_ms;
}

static void
unbound(const struct rlock_opts *o, struct conn_cfg *cfg, struct conn *cn)
{
	if (!wait_bound(o))
		return;
	cfg->connect_timeout_ms = o->connect_timeout_ms;
	conn_set_timeouts(cn, cfg->connect_timeout_ms,
	    cfg->connect_timeout_ms);
}

/* A failure within the bound names it: --timeout, not --connect-timeout. */
static void
say_bound(const struct rlock_opts *o, struct conn *cn)
{
	char d[32];
	size_t n = strlen(cn->err);

	if (!wait_bound(o) || cn->status != RL_EXIT_UNAVAILABLE)
		return;
	dur_format(o->wait_ms, d, sizeof(d));
	snprintf(cn->err + n, sizeof(cn->err) - n, " (--timeout %s)", d);
}

static int
acquire_and_run(struct rlock_opts *o, struct conn_cfg *cfg, struct conn *cn,
    int sigfd)
{
	struct wait_result res;
	struct lock_ctx ctx;
	int st, sig;

	lock_ctx_init(&ctx, o->prefix, o->key, o->lease_ms, o->limit, o->fair,
	    NULL, cli_command_line(o));
	switch (wait_lock(cn, &ctx, o->wait_ms, sigfd, &res)) {
	case WAIT_GRANTED:
		unbound(o, cfg, cn);
		break;
	case WAIT_TIMEOUT:
		st = not_obtained(o, cn, &ctx);
		goto out;
	case WAIT_SIGNAL:
		msg_verbose("signal %d while waiting; giving up", res.signo);
		st = RL_EXIT_SIGNAL_BASE + res.signo;
		goto out;
	default:
		if (cn->own_error) {
			char key[96];

			printable(o->key, strlen(o->key), key, sizeof(key));
			msg_err("'%s': %s", key, cn->err);
		}
		else {
			say_bound(o, cn);
			run_report_conn_error(cn->cfg, cn->status, cn->err);
		}
		st = cn->status;
		goto out;
	}
	/* Never start COMMAND after a signal told us to stop. */
	while ((sig = sig_take(sigfd, NULL)) == SIGCHLD)
		;
	if (sig != 0) {
		(void)lock_release(cn, &ctx);
		st = RL_EXIT_SIGNAL_BASE + sig;
		goto out;
	}
	msg_verbose("acquired '%s' (fence %lld)", o->key,
	    (long long)res.fence);
	st = sup_run(o, &ctx, cn, sigfd, &res);
out:
	lock_ctx_free(&ctx);
	return st;
}

int
run_mode(struct rlock_opts *o, int sigfd)
{
	struct conn_cfg cfg;
	struct conn cn;
	int st;

	if ((st = run_conn_cfg(o, &cfg)) != 0)
		return st;
	if (wait_bound(o))
		cfg.connect_timeout_ms = o->wait_ms;
	if ((st = conn_open(&cn, &cfg, cfg.connect_timeout_ms)) != 0) {
		say_bound(o, &cn);
		run_report_conn_error(&cfg, st, cn.err);
		goto out;
	}
	guard_eviction(&cn);
	if (!try_reenter(o, &cn, &st))
		st = acquire_and_run(o, &cfg, &cn, sigfd);
out:
	conn_close(&cn);
	run_conn_cfg_free(&cfg);
	return st;
}
