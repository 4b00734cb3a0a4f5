// SPDX-License-Identifier: MIT
/*
 * Redlock, as the Redis docs describe it, on top of the one-server
 * scripts: the same token and scripts on every master, one at a time
 * (loopback showed no gain from multiplexing, REDIS-NOTES section 6),
 * each master bounded by a per-master timeout far below the lease
 * (cfg->peer_timeout_ms), so a stalled master costs one such timeout.
 *
 * Fencing: each master's acquire gives max(its last + 1, its clock). The
 * holder uses F = the largest of its majority and first writes F back to
 * that majority (fence_raise.lua). Any later majority overlaps this one
 * in some master, which can only grant after our lease there ended and so
 * after the write-back: its fence is above F. COMMAND starts only after
 * the write-back succeeded on a majority.
 */
#include "quorum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "exitcode.h"
#include "lua_scripts.h"
#include "script.h"
#include "util.h"

/* Redlock's clock-drift allowance, as supervise.c counts it. */
#define DRIFT_MS(lease) ((lease) / 100 + 2)
/* After a split vote, retry within this, at random (Redlock's advice). */
#define SPLIT_RETRY_MAX_MS 50

int
quorum_majority(const struct conn *cn)
{
	return cn->cfg->npeers / 2 + 1;
}

static int
peers_open(const struct conn *cn)
{
	int i, up = 0;

	for (i = 0; cn->peers && i < cn->cfg->npeers; i++)
		up += cn->peers[i].c != NULL;
	return up;
}

int
quorum_is_open(const struct conn *cn)
{
	return peers_open(cn) >= quorum_majority(cn);
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The worst failure among the masters, for the exit status: a refusal
 * of our credentials or an unusable answer says more than a timeout. */
static void
say_short(struct conn *cn, const char *what, int ok)
{
	const struct conn *why = NULL;
	int i, n = cn->cfg->npeers;
	char url[300];

	cn->status = RL_EXIT_UNAVAILABLE;
	for (i = 0; i < n; i++) {
		if (cn->peers[i].err[0] == '\0' || cn->peers[i].status == 0)
			continue;
		if (why == NULL || cn->peers[i].status != RL_EXIT_UNAVAILABLE)
			why = &cn->peers[i];
	}
	if (why && why->status != RL_EXIT_UNAVAILABLE)
		cn->status = why->status;
	url[0] = '\0';
	if (why)
		url_redacted(&why->cfg->ep, url, sizeof(url));
	snprintf(cn->err, sizeof(cn->err), "%s: only %d of %d masters %s "
	    "(%d needed)%s%.60s%s%.100s", what, ok, n, strcmp(what,
	    "connect") ? "answered" : "reachable", quorum_majority(cn),
	    why ? "; " : "", url, why ? ": " : "", why ? why->err : "");
}

int
quorum_reopen(struct conn *cn)
{
	const struct conn_cfg *cfg = cn->cfg;
	int i, n = cfg->npeers;

	if (cn->peers == NULL) {
		cn->peers = xcalloc((size_t)n, sizeof(*cn->peers));
		for (i = 0; i < n; i++) {
			cn->peers[i].cfg = &cfg->peers[i];
			conn_set_timeouts(&cn->peers[i], min64(
			    cn->connect_timeout_ms, cfg->peer_timeout_ms),
			    min64(cn->cmd_timeout_ms, cfg->peer_timeout_ms));
		}
	}
	for (i = 0; i < n; i++)
		if (cn->peers[i].c == NULL)
			(void)conn_reopen(&cn->peers[i]);
	if (quorum_is_open(cn)) {
		cn->status = 0;
		cn->err[0] = '\0';
		return 0;
	}
	say_short(cn, "connect", peers_open(cn));
	return cn->status;
}

void
quorum_close(struct conn *cn)
{
	int i;

	for (i = 0; cn->peers && i < cn->cfg->npeers; i++)
		conn_close(&cn->peers[i]);
	free(cn->peers);
	cn->peers = NULL;
}

void
quorum_set_timeouts(struct conn *cn, int64_t connect_ms, int64_t cmd_ms)
{
	int64_t cap = cn->cfg->peer_timeout_ms;
	int i;

	cn->connect_timeout_ms = connect_ms;
	cn->cmd_timeout_ms = cmd_ms;
	for (i = 0; cn->peers && i < cn->cfg->npeers; i++)
		conn_set_timeouts(&cn->peers[i], min64(connect_ms, cap),
		    min64(cmd_ms, cap));
}

/* Masters that dropped are tried again; each costs at most a timeout. */
static void
reconnect_dropped(struct conn *cn)
{
	int i;

	if (cn->peers == NULL) {
		(void)quorum_reopen(cn);
		return;
	}
	for (i = 0; i < cn->cfg->npeers; i++)
		if (cn->peers[i].c == NULL)
			(void)conn_reopen(&cn->peers[i]);
}

static int
fence_raise(struct conn *peer, const struct lock_ctx *ctx, int64_t fence)
{
	const struct lock_keys *k = &ctx->k;
	char f[24], ttl[24];
	const char *argv[6] = { k->lock, k->fence, k->meta, ctx->token, f,
	    ttl };
	size_t lens[6] = { k->lock_len, k->fence_len, k->meta_len,
	    strlen(ctx->token), 0, 0 };
	redisReply *r;
	long long v;

	lens[4] = (size_t)snprintf(f, sizeof(f), "%lld", (long long)fence);
	lens[5] = (size_t)snprintf(ttl, sizeof(ttl), "%lld",
	    (long long)FENCE_TTL_MS);
	if ((r = script_run(peer, &lua_fence_raise, 3, 3, argv, lens)) ==
	    NULL)
		return -1;
	if (lock_parse_int(r, &v) < 0) {
		conn_fail_reply(peer, "fence", r);
		v = -1;
	}
	freeReplyObject(r);
	return (int)v;
}

static int64_t
split_retry_ms(void)
{
	unsigned short r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)mono_ms();
	return 1 + r % SPLIT_RETRY_MAX_MS;
}

/* Undo a partial grant on every master still connected, those that
 * said busy included (Redlock's step 3). One whose answer timed out was
 * closed (a reset socket) and may still have applied the acquire: that
 * grant nobody uses lapses with the lease, or is undone by our next
 * attempt, as acquire and release are idempotent per token. */
static void
undo(struct conn *cn, const struct lock_ctx *ctx)
{
	int i;

	for (i = 0; i < cn->cfg->npeers; i++)
		if (cn->peers[i].c != NULL)
			(void)lock_release(&cn->peers[i], ctx);
}

enum lock_result
quorum_acquire(struct conn *cn, const struct lock_ctx *ctx,
    int want_holder, int64_t *fence, struct lock_busy *busy)
{
	int i, n = cn->cfg->npeers, got = 0, errs = 0, own = -1, raised = 0;
	int64_t t0 = mono_ms(), f, best = 0;
	unsigned char granted[REDLOCK_MAX_PEERS] = { 0 };
	struct lock_busy b;
	int have_busy = 0;

	reconnect_dropped(cn);
	for (i = 0; i < n; i++) {
		struct conn *p = &cn->peers[i];

		if (p->c == NULL) {
			errs++;
			continue;
		}
		switch (lock_acquire(p, ctx, 0, want_holder && !have_busy,
		    &f, &b)) {
		case LOCK_GRANTED:
			granted[i] = 1;
			got++;
			if (f > best)
				best = f;
			break;
		case LOCK_BUSY:
			if (!have_busy)
				*busy = b;
			else if (b.wait_ms >= 0 && (busy->wait_ms < 0 ||
			    b.wait_ms < busy->wait_ms))
				busy->wait_ms = b.wait_ms;
			have_busy = 1;
			break;
		default:
			errs++;
			if (p->own_error)
				own = i;
			break;
		}
	}
	if (got >= quorum_majority(cn) && own < 0) {
		for (i = 0; i < n; i++)
			if (granted[i] && fence_raise(&cn->peers[i], ctx,
			    best) == 1)
				raised++;
		if (raised >= quorum_majority(cn) && mono_ms() - t0 <
		    ctx->lease_ms - DRIFT_MS(ctx->lease_ms)) {
			*fence = best;
			return LOCK_GRANTED;
		}
		msg_verbose("a majority granted '%s' but too late or without "
		    "its fence (%d of %d); undoing", ctx->key, raised, got);
	}
	if (got > 0 || errs > 0)
		undo(cn, ctx);
	if (own >= 0) {
		cn->status = cn->peers[own].status;
		cn->own_error = 1;
		memcpy(cn->err, cn->peers[own].err, sizeof(cn->err));
		return LOCK_ERROR;
	}
	if (errs > n - quorum_majority(cn)) {
		cn->own_error = 0;
		say_short(cn, "acquire", n - errs);
		return LOCK_ERROR;
	}
	if (!have_busy) {
		memset(busy, 0, sizeof(*busy));
		busy->position = -1;
		busy->lease_left_ms = -2;	/* nobody has a majority */
	}
	/* Nobody has a majority (rivals split the masters): all undo, and
	 * each retries after its own random pause. */
	if (got > 0 || !have_busy)
		busy->wait_ms = split_retry_ms();
	return LOCK_BUSY;
}

/* op on every connected master (after trying the dropped ones again):
 * how many said 1 and how many said 0; errors count as neither. */
static void
tally(struct conn *cn, const struct lock_ctx *ctx,
    int (*op)(struct conn *, const struct lock_ctx *), int *yes, int *no)
{
	int i, r;

	*yes = *no = 0;
	reconnect_dropped(cn);
	for (i = 0; i < cn->cfg->npeers; i++) {
		if (cn->peers[i].c == NULL)
			continue;
		r = op(&cn->peers[i], ctx);
		*yes += r == 1;
		*no += r == 0;
	}
}

int
quorum_extend(struct conn *cn, const struct lock_ctx *ctx)
{
	int ok, lost;

	tally(cn, ctx, lock_extend, &ok, &lost);
	if (ok >= quorum_majority(cn))
		return 1;
	if (lost > cn->cfg->npeers - quorum_majority(cn))
		return 0;
	say_short(cn, "extend", ok);
	return -1;
}

int
quorum_release(struct conn *cn, const struct lock_ctx *ctx)
{
	int done, lost;

	tally(cn, ctx, lock_release, &done, &lost);
	if (lost > cn->cfg->npeers - quorum_majority(cn))
		return 0;
	if (done + lost < quorum_majority(cn)) {
		say_short(cn, "release", done + lost);
		return -1;
	}
	return 1;
}

int
quorum_is_ours(struct conn *cn, const struct lock_ctx *ctx)
{
	int yes, no;

	tally(cn, ctx, lock_is_ours, &yes, &no);
	if (yes >= quorum_majority(cn))
		return 1;
	if (no > cn->cfg->npeers - quorum_majority(cn))
		return 0;
	say_short(cn, "re-entry check", yes + no);
	return -1;
}
