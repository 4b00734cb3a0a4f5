/* SPDX-License-Identifier: MIT */
/*
 * Lock modes: what a lock is in Redis. rlock's own lock (a mutex, a
 * share or a semaphore slot under --prefix: mode_rlock.c) and Redisson's
 * (--redisson: mode_redisson.c) are each one row of this table: the names
 * of KEY's keys and channels, the script call of each operation, how a
 * waiter is woken and the run options the mode refuses. single.c runs
 * the calls, report_view.c shows the inspect call's reply, cli.c checks
 * the options; none of them knows which mode it holds. Pure: no I/O.
 * Adding a mode: HACKING.md, "Adding a lock mode".
 */
#ifndef RLOCK_MODE_H
#define RLOCK_MODE_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "script_args.h"

/* One script call, with room for the numbers it passes as strings. */
struct mode_call {
	const char *what;		/* for messages: "acquire", ... */
	struct script_args a;
	char num[12][24];
	int nums;			/* of num, used */
	char field[48];			/* a mode's holder field */
	/* Does the acquire count a busy answer as this run skipped
	 * (ctx->skip_count, where the mode can)? mode_start: no. */
	int counts_skip;
};

/* Run options a mode refuses (64, with the mode's reason). */
#define MODE_NO_LIMIT		0x1	/* -N */
#define MODE_NO_SHARED		0x2	/* -s */
#define MODE_NO_MIN_HOLD	0x4	/* --min-hold */
#define MODE_NO_REDLOCK		0x8	/* --redlock */

/* How its waiters are woken. */
enum mode_wake {
	/* BLPOP on tokens (plain), own channel my_wake (--fair) */
	MODE_WAKE_TOKENS,
	/* every waiter subscribes: to wake, or to my_wake with --fair;
	 * SUBSCRIBE and SSUBSCRIBE both (the releases PUBLISH or SPUBLISH) */
	MODE_WAKE_CHANNEL,
};

struct lock_mode {
	const char *name;	/* its option's name; "" for rlock's own */
	unsigned refuses;	/* MODE_NO_* */
	const char *refused_why;	/* why, after "X does not go with" */
	enum mode_wake wake;
	/* Who holds KEY when no record of rlock's says: in messages. */
	const char *stranger;
	/* rlock's own layout: shares, the --fair turn and :w entries, a
	 * foreign holder to look at (single.c's descriptions). */
	int own_layout;
	/* KEY's names (keys.h) under prefix, for a waiter with token
	 * (NULL: none); freed by lock_keys_free. */
	void (*keys)(struct lock_keys *k, const char *prefix, const char *key,
	    size_t keylen, const char *token);
	/* Each operation's call (lock.h says what each one answers). */
	void (*acquire)(struct mode_call *c, const struct lock_ctx *ctx,
	    int queue, int want_holder);
	void (*extend)(struct mode_call *c, const struct lock_ctx *ctx);
	void (*release)(struct mode_call *c, const struct lock_ctx *ctx);
	void (*is_ours)(struct mode_call *c, const struct lock_ctx *ctx);
	void (*dequeue)(struct mode_call *c, const struct lock_ctx *ctx);
	/* A --fair waiter's refresh; NULL: its attempts keep its place. */
	void (*heartbeat)(struct mode_call *c, const struct lock_ctx *ctx);
	/* status (inspect.lua's reply shape) and release --force. */
	void (*inspect)(struct mode_call *c, const struct lock_keys *k);
	void (*force)(struct mode_call *c, const struct lock_keys *k);
};

extern const struct lock_mode mode_rlock, mode_redisson;

/* Every mode, rlock's own first; NULL-terminated. */
extern const struct lock_mode *const lock_modes[];

/* The mode whose option is `name` ("redisson"), or NULL. */
const struct lock_mode *mode_by_name(const char *name);

/* Fill ctx: mode, its keys, a fresh random token (or `token` if not
 * NULL), host, user, pid, command line (taken over). Free with
 * lock_ctx_free. */
void lock_ctx_init(struct lock_ctx *ctx, const struct lock_mode *mode,
    const char *prefix, const char *key, int64_t lease_ms, long limit,
    int fair, const char *token, char *cmdline);

/* The holder's pid as recorded (rlock lock: the section's owner). */
void lock_ctx_set_pid(struct lock_ctx *ctx, long pid);

/* Start c, the call of script sc (`what` in messages); its args. */
struct script_args *mode_start(struct mode_call *c, const char *what,
    const struct lua_script *sc);

/* "%lld" of v in the next of c->num, returned; and as argument `name`. */
const char *mode_num(struct mode_call *c, long long v);
void mode_arg_num(struct mode_call *c, int name, long long v);

#endif
