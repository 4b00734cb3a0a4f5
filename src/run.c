// SPDX-License-Identifier: MIT
/*
 * The run mode's sequence, and the messages for its failures. It never
 * holds the lock when it returns an error: wait.c undoes uncertain
 * attempts, supervise.c releases.
 */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exitcode.h"
#include "guard.h"
#include "lock.h"
#include "section.h"
#include "sig.h"
#include "supervise.h"
#include "util.h"
#include "wait.h"

/*
 * --timeout bounds the whole wait, connecting included: until the lock is
 * ours, no connect or command may take longer than the wait and the grace
 * of its last attempt (wait_try_ms; a shorter --connect-timeout still
 * wins), so a --timeout shorter than a round trip takes a free lock, as
 * flock -w does, where a try cut at the wait would find Redis silent.
 * Holding the lock, releasing it and the renewals have the full
 * --connect-timeout again.
 */
static int
wait_bound(const struct rlock_opts *o)
{
	return o->wait_ms > 0 && o->wait_ms < o->connect_timeout_ms;
}

/* A failure within the bound names it: --timeout, not --connect-timeout. */
static void
report_bound(const struct rlock_opts *o, const struct lock_cfg *cfg,
    const struct failure *f, int answered)
{
	struct failure b = *f;
	char d[32];
	size_t n = strlen(b.why);

	if (wait_bound(o) && b.status == RL_EXIT_UNAVAILABLE) {
		dur_format(o->wait_ms, d, sizeof(d));
		snprintf(b.why + n, sizeof(b.why) - n, " (--timeout %s)", d);
	}
	config_report(cfg, &b, answered);
}

/*
 * A nested rlock of the KEY its ancestor holds (a run's COMMAND inherits
 * the token; a section's holder tells it): if Redis confirms the token
 * holds KEY now, run COMMAND at once (the ancestor renews and releases),
 * or, for `rlock lock`, hold nothing more. A KEY that is free or held by
 * others is not re-entered. A share held by the ancestor covers a nested
 * -s, not an exclusive run: that would be an upgrade, which would
 * deadlock against the ancestor's own share (and two such ancestors
 * against each other), so it is refused at once.
 */
static int
try_reenter(struct rlock_opts *o, const struct lock_cfg *cfg, struct lock *l,
    struct guard *g, int *status)
{
	const char *token = getenv("RLOCK_TOKEN"), *key = getenv("RLOCK_KEY");
	struct lock_ctx ctx;
	int ours;

	if ((token == NULL || key == NULL || strcmp(key, o->key) != 0 ||
	    strlen(token) != 36) && (section_env(o->key) < 0 ||
	    (token = getenv("RLOCK_TOKEN")) == NULL))
		return 0;
	lock_ctx_init(&ctx, o->lmode, o->prefix, o->key, o->lease_ms, o->limit,
	    0, token, xstrdup(""));
	ctx.shared = o->shared;
	ours = lock_is_ours(l, &ctx);
	if (ours < 0 && guard_refused(g, lock_failure(l)) &&
	    lock_open(l) == 0)
		ours = lock_is_ours(l, &ctx);
	lock_ctx_free(&ctx);
	if (ours < 0) {
		*status = lock_failure(l)->status;
		report_bound(o, cfg, lock_failure(l), 0);
		return 1;
	}
	if (ours == 0)
		return 0;
	lock_close(l);
	if (ours == 2) {
		char name[96];

		printable(o->key, strlen(o->key), name, sizeof(name));
		msg_notice("'%s' is held shared by an ancestor of this rlock; "
		    "an exclusive lock would be an upgrade, which rlock does "
		    "not do: take '%s' exclusively in the ancestor", name,
		    name);
		*status = o->conflict_exit;
		return 1;
	}
	msg_verbose("'%s' is already held by our ancestor: re-entering",
	    o->key);
	if (o->mode == MODE_LOCK && o->export_env)
		section_export(o->key, token, getenv("RLOCK_FENCE"));
	*status = o->mode == MODE_LOCK ? 0 : sup_exec_here(o);
	return 1;
}

/*
 * The holder of b, a busy answer that counted our skip, as
 * lock_describe_holder words it: 1, or 0 when b names no one exclusive
 * holder (KEY shared, free for a --fair head; a meta without its user),
 * whom that must find.
 */
static int
busy_holder(const struct lock_busy *b, char *buf, size_t len)
{
	char run[160];

	if (!b->skip_counted || (b->user[0] == '\0' && !b->foreign))
		return 0;
	if (b->user[0] == '\0') {
		snprintf(buf, len, "another client");
		return 1;
	}
	/* A run that ended, whose KEY --min-hold keeps until it expires. */
	holder_run(run, sizeof(run), b->pid, b->cmd, strlen(b->cmd),
	    b->ended_ms > 0 && b->lease_left_ms >= 0 ?
	    b->now_ms + b->lease_left_ms : 0);
	snprintf(buf, len, "%s@%s (%s)", b->user, b->host, run);
	return 1;
}

/*
 * Not obtained: say by whom (stderr unless -q; syslog with --syslog), and
 * count the skipped run in P{KEY}:last, so `status` shows how many runs
 * the last one made skip: b, the -n attempt's busy answer, may have done
 * both already (ctx->skip_count). The count is best effort: it never
 * changes the exit status.
 */
static int
not_obtained(const struct rlock_opts *o, struct lock *l,
    const struct lock_ctx *ctx, const struct lock_busy *b, const char *key)
{
	char who[512], wait[32];

	if (msg_level >= MSG_NORMAL || msg_syslog_on()) {
		if (o->limit > 1)
			snprintf(who, sizeof(who), "all of its %ld holders "
			    "(--limit %ld)", o->limit, o->limit);
		else if (!busy_holder(b, who, sizeof(who)))
			lock_describe_holder(l, ctx, who, sizeof(who));
		if (o->wait_ms == 0) {
			msg_notice("'%s' is held by %s; not waiting "
			    "(--nonblock)", key, who);
		} else {
			dur_format(o->wait_ms, wait, sizeof(wait));
			msg_notice("'%s' is still held by %s after --timeout "
			    "%s", key, who, wait);
		}
	}
	if (!b->skip_counted && ((!lock_is_open(l) && lock_open(l) != 0) ||
	    lock_record(l, ctx, NULL, 0) < 0))
		msg_verbose("could not count the skipped run of '%s': %s",
		    key, lock_failure(l)->why);
	return o->conflict_exit;
}

/*
 * The lease to ask for: --lease, but no longer than --max-hold's bound
 * (sup_hold_bound): a lease past the point COMMAND is surely dead would
 * only keep KEY from others for longer if rlock itself died.
 */
static int64_t
lease_for(const struct rlock_opts *o)
{
	int64_t cap = sup_hold_bound(o, o->lease_ms);

	if (cap == 0 || cap >= o->lease_ms)
		return o->lease_ms;
	return cap < LEASE_MIN_MS ? LEASE_MIN_MS : cap;
}

static void
get_ahead(void *a, struct lock *l, const struct lock_ctx *ctx)
{
	sup_ahead(a, l, ctx);
}

/* start: mono ms when the run began; --timeout counts from there. */
static int
acquire_and_run(struct rlock_opts *o, const struct lock_cfg *cfg,
    struct lock *l, struct guard *g, int sigfd, int64_t start)
{
	struct sup_ahead a = { 0 };
	struct wait_hooks hooks = { get_ahead, &a };
	struct wait_result res;
	struct lock_ctx ctx;
	char name[96], waited[32];
	enum wait_status ws;
	int st, sig;

	lock_ctx_init(&ctx, o->lmode, o->prefix, o->key, lease_for(o), o->limit,
	    o->fair, NULL, cli_command_line(o));
	ctx.shared = o->shared;
	/* A section's holder is forked after the grant: of what is made
	 * ahead, only the watcher is a process it can take over. */
	if (o->mode == MODE_LOCK) {
		lock_ctx_set_pid(&ctx, o->owner);
		hooks.idle = NULL;
	}
	/* What the wait will run besides the scripts: acquire.lua checks
	 * the ACL allows it before taking the lock. */
	if (o->wait_ms != 0)
		ctx.acl_needs = o->fair ? "f" : "w";
	else
		ctx.skip_count = 1;
	printable(o->key, strlen(o->key), name, sizeof(name));
	/* From the first acquire on, something of ours may be in Redis: a
	 * signal no longer ends rlock where it stands, but ends the wait
	 * (wait.c undoes what it may have started). */
	sig_hold();
	(void)sig_stop_watch(1);
	ws = wait_lock(l, &ctx, o->wait_ms, start, sigfd, &res, &hooks);
	/* Closed on the eviction check ahead of the acquire (which the
	 * server so never read): once more, without it. */
	if (ws == WAIT_ERROR && guard_refused(g, &res.fail)) {
		if (lock_open(l) == 0)
			ws = wait_lock(l, &ctx, o->wait_ms, start, sigfd,
			    &res, &hooks);
		else
			res.fail = *lock_failure(l);
	}
	/* A failure, and a signal too: the signal is what to say. */
	if (ws == WAIT_ERROR && (res.signo = sig_take_stop(sigfd)) != 0)
		ws = WAIT_SIGNAL;
	if (ws == WAIT_GRANTED && wait_bound(o))
		lock_set_timeouts(l, o->connect_timeout_ms,
		    o->connect_timeout_ms);
	if (ws == WAIT_TIMEOUT) {
		st = not_obtained(o, l, &ctx, &res.busy, name);
		/* A signal while the skip was counted: 128+N all the same. */
		if ((sig = sig_take_stop(sigfd)) != 0)
			st = RL_EXIT_SIGNAL_BASE + sig;
	} else if (ws == WAIT_SIGNAL) {
		msg_verbose("signal %d while waiting; giving up", res.signo);
		st = RL_EXIT_SIGNAL_BASE + res.signo;
	} else if (ws == WAIT_ERROR) {
		if (res.fail.kind == FAIL_SCRIPT)
			msg_err("'%s': %s", name, res.fail.why);
		else
			report_bound(o, cfg, &res.fail, res.answered);
		st = res.fail.status;
	} else if ((st = sup_stopped(l, &ctx, sigfd)) == 0) {
		dur_format(mono_ms() - start, waited, sizeof(waited));
		msg_event(LOG_INFO, "acquired '%s' after %s (fence %lld)",
		    name, waited, (long long)res.fence);
		st = o->mode == MODE_LOCK ?
		    section_hold(o, &ctx, l, sigfd, &res, &a) :
		    sup_run(o, &ctx, l, sigfd, &res, &a);
	}
	(void)sig_stop_watch(0);
	sup_ahead_drop(&a);
	lock_ctx_free(&ctx);
	return st;
}

int
run_mode(struct rlock_opts *o, int sigfd)
{
	struct guard g = { 0 };
	struct lock_cfg cfg;
	struct lock *l;
	int64_t t, start = mono_ms();
	int st;

	if (o->mode == MODE_LOCK && (st = section_owner(o)) != 0)
		return st;
	config_lock(o, &cfg);
	l = lock_new(&cfg);
	if (wait_bound(o)) {
		t = wait_try_ms(o->wait_ms, o->connect_timeout_ms);
		lock_set_timeouts(l, t, t);
	}
	/* Weather met by the login under -w is the wait's to ride out. */
	if ((st = lock_open(l)) != 0 &&
	    !wait_first_weather(o->wait_ms, lock_failure(l))) {
		report_bound(o, &cfg, lock_failure(l), 0);
		goto out;
	}
	guard_eviction(&g, l);
	if (!try_reenter(o, &cfg, l, &g, &st))
		st = acquire_and_run(o, &cfg, l, &g, sigfd, start);
out:
	lock_free(l);
	lock_cfg_free(&cfg);
	return st;
}
