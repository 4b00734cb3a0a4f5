// SPDX-License-Identifier: MIT
/* The table of lock modes; see mode.h. */
#include "mode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "user.h"
#include "util.h"

const struct lock_mode *const lock_modes[] = {
	&mode_rlock,
	&mode_redisson,
	NULL
};

const struct lock_mode *
mode_by_name(const char *name)
{
	size_t i;

	for (i = 0; lock_modes[i] != NULL; i++)
		if (strcmp(lock_modes[i]->name, name) == 0)
			return lock_modes[i];
	return NULL;
}

struct script_args *
mode_start(struct mode_call *c, const char *what, const struct lua_script *sc)
{
	c->what = what;
	c->counts_skip = 0;
	c->nums = 0;
	script_args_init(&c->a, sc);
	return &c->a;
}

const char *
mode_num(struct mode_call *c, long long v)
{
	char *s;

	/* A call with more numbers than room is a bug in rlock. */
	if (c->nums == (int)(sizeof(c->num) / sizeof(c->num[0])))
		abort();
	s = c->num[c->nums++];
	snprintf(s, sizeof(c->num[0]), "%lld", v);
	return s;
}

void
mode_arg_num(struct mode_call *c, int name, long long v)
{
	script_arg_str(&c->a, name, mode_num(c, v));
}

void
lock_ctx_init(struct lock_ctx *ctx, const struct lock_mode *mode,
    const char *prefix, const char *key, int64_t lease_ms, long limit,
    int fair, const char *token, char *cmdline)
{
	uuid_t u;

	memset(ctx, 0, sizeof(*ctx));
	if (token) {
		snprintf(ctx->token, sizeof(ctx->token), "%s", token);
	} else {
		/* uuid_generate_random reads getrandom(): a CSPRNG. */
		uuid_generate_random(u);
		uuid_unparse_lower(u, ctx->token);
	}
	ctx->mode = mode;
	mode->keys(&ctx->k, prefix, key, strlen(key), ctx->token);
	ctx->key = key;
	ctx->prefix = prefix;
	ctx->lease_ms = lease_ms;
	ctx->limit = limit;
	ctx->fair = fair;
	if (gethostname(ctx->host, sizeof(ctx->host) - 1) < 0)
		snprintf(ctx->host, sizeof(ctx->host), "unknown");
	user_name(ctx->user, sizeof(ctx->user));
	ctx->cmdline = cmdline;
	lock_ctx_set_pid(ctx, (long)getpid());
}

void
lock_ctx_set_pid(struct lock_ctx *ctx, long pid)
{
	size_t n;

	snprintf(ctx->pid, sizeof(ctx->pid), "%ld", pid);
	n = strlen(ctx->user) + strlen(ctx->host) + strlen(ctx->pid) +
	    strlen(ctx->cmdline) + 4;
	free(ctx->waiter_info);
	ctx->waiter_info = xmalloc(n);
	snprintf(ctx->waiter_info, n, "%s\x1f%s\x1f%s\x1f%s", ctx->user,
	    ctx->host, ctx->pid, ctx->cmdline);
}
