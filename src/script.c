// SPDX-License-Identifier: MIT
/* EVALSHA with the NOSCRIPT fallback; see script.h. */
#include "script.h"

#include <stdio.h>
#include <string.h>

static int
error_has(const redisReply *r, const char *what)
{
	return r->type == REDIS_REPLY_ERROR && strstr(r->str, what) != NULL;
}

/* evalsha, then eval on NOSCRIPT: "EVALSHA"/"EVAL" or their _RO forms. */
static redisReply *
run(struct conn *cn, const char *evalsha, const char *eval,
    const struct lua_script *s, int nkeys, int nargs, const char **argv,
    const size_t *lens)
{
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
	redisReply *r;
	int i, n = nkeys + nargs;

	if (n > SCRIPT_MAX_ARGS)
		return NULL;
	snprintf(nk, sizeof(nk), "%d", nkeys);
	av[0] = evalsha;
	al[0] = strlen(evalsha);
	av[1] = s->sha;
	al[1] = strlen(s->sha);
	av[2] = nk;
	al[2] = strlen(nk);
	for (i = 0; i < n; i++) {
		av[3 + i] = argv[i];
		al[3 + i] = lens[i];
	}
	r = conn_command(cn, 3 + n, av, al);
	if (r == NULL || r->type != REDIS_REPLY_ERROR ||
	    strncmp(r->str, "NOSCRIPT", 8) != 0)
		return r;
	freeReplyObject(r);
	av[0] = eval;
	al[0] = strlen(eval);
	av[1] = s->body;
	al[1] = s->len;
	return conn_command(cn, 3 + n, av, al);
}

redisReply *
script_run(struct conn *cn, const struct lua_script *s, int nkeys,
    int nargs, const char **argv, const size_t *lens)
{
	return run(cn, "EVALSHA", "EVAL", s, nkeys, nargs, argv, lens);
}

redisReply *
script_run_ro(struct conn *cn, const struct lua_script *s, int nkeys,
    int nargs, const char **argv, const size_t *lens)
{
	redisReply *r;

	r = run(cn, "EVALSHA_RO", "EVAL_RO", s, nkeys, nargs, argv, lens);
	/* Redis 6 has no _RO forms (an ACL may also leave them out). */
	if (r != NULL && (error_has(r, "unknown command") ||
	    (error_has(r, "NOPERM") && error_has(r, "_ro")))) {
		freeReplyObject(r);
		return script_run(cn, s, nkeys, nargs, argv, lens);
	}
	return r;
}
