// SPDX-License-Identifier: MIT
/* EVALSHA with the NOSCRIPT fallback; see script.h. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
error_has(const struct reply *r, const char *what)
{
	return r->type == REPLY_ERROR && strstr(r->str, what) != NULL;
}

static int
is_noscript(const struct reply *r)
{
	return r->type == REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* A script call's command line, with room for the most arguments. */
struct eval_argv {
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
};

/* cmd ("EVALSHA", "EVAL" or their _RO forms) then the script's sha (or
 * with text, for EVAL, its text), the key count and a's keys and
 * arguments, into e: their count. No script takes more than e holds
 * (lua_scripts.c asserts it at build time). */
static int
eval_argv(const char *cmd, int text, const struct script_args *a,
    struct eval_argv *e)
{
	int i, n = a->nkeys + a->nargs;

	snprintf(e->nk, sizeof(e->nk), "%d", a->nkeys);
	e->av[0] = cmd;
	e->al[0] = strlen(cmd);
	e->av[1] = text ? a->sc->body : a->sc->sha;
	e->al[1] = text ? a->sc->len : strlen(a->sc->sha);
	e->av[2] = e->nk;
	e->al[2] = strlen(e->nk);
	for (i = 0; i < n; i++) {
		e->av[3 + i] = a->v[i];
		e->al[3 + i] = a->len[i];
	}
	return 3 + n;
}

/* cmd with a, as a command on s. text (EVAL) for a server that said
 * NOSCRIPT: the text also caches the script for the next EVALSHA. */
static struct reply *
command(struct server *s, const char *cmd, int text,
    const struct script_args *a)
{
	struct eval_argv e;
	int n = eval_argv(cmd, text, a, &e);

	return server_command(s, n, e.av, e.al);
}

/* evalsha, then eval on NOSCRIPT: "EVALSHA"/"EVAL" or their _RO forms. */
static struct reply *
run(struct server *s, const char *evalsha, const char *eval,
    const struct script_args *a)
{
	struct reply *r = command(s, evalsha, 0, a);

	if (r == NULL || !is_noscript(r))
		return r;
	reply_free(r);
	return command(s, eval, 1, a);
}

struct reply *
script_call(struct server *s, const struct script_args *a)
{
	return run(s, "EVALSHA", "EVAL", a);
}

struct reply *
script_call_ro(struct server *s, const struct script_args *a)
{
	struct reply *r;

	r = run(s, "EVALSHA_RO", "EVAL_RO", a);
	/* A proxy that does not take them (twemproxy) closes the
	 * connection on them: a new one, without (a restart would have
	 * closed it as well; the script only reads, either way). */
	if (r == NULL && (failure_closed_on(server_failure(s),
	    CMD_EVALSHA_RO) || failure_closed_on(server_failure(s),
	    CMD_EVAL_RO)))
		return script_call(s, a);
	/* Redis 6 has no _RO forms (an ACL may also leave them out). */
	if (r != NULL && (error_has(r, "unknown command") ||
	    (error_has(r, "NOPERM") && error_has(r, "_ro")))) {
		reply_free(r);
		return script_call(s, a);
	}
	return r;
}

int
script_send(struct server *s, const struct script_args *a)
{
	struct eval_argv e;
	int n = eval_argv("EVALSHA", 0, a, &e);

	return server_send(s, n, e.av, e.al);
}

struct reply *
script_recv(struct server *s, const struct script_args *a, int64_t deadline)
{
	struct reply *r = server_reply(s, deadline, "EVALSHA");

	if (r == NULL)
		return NULL;
	/* A script cache emptied by a restart: the text at once (asking
	 * EVALSHA again only heard NOSCRIPT again, a round trip lost on every
	 * fresh server). A Cluster slot that moved (s then knows where to
	 * go): as script_call, from the start. */
	if (is_noscript(r)) {
		reply_free(r);
		return command(s, "EVAL", 1, a);
	}
	if (server_take_redirect(s, r)) {
		reply_free(r);
		return script_call(s, a);
	}
	return r;
}
