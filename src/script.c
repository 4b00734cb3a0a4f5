// SPDX-License-Identifier: MIT
/* EVALSHA with the NOSCRIPT fallback; see script.h. */
#include "script.h"

#include <stdio.h>
#include <string.h>

#include "exitcode.h"

static int
error_has(const struct reply *r, const char *what)
{
	return r->type == REPLY_ERROR && strstr(r->str, what) != NULL;
}

/* evalsha, then eval on NOSCRIPT: "EVALSHA"/"EVAL" or their _RO forms. */
static struct reply *
run(struct server *s, const char *evalsha, const char *eval,
    const struct lua_script *sc, int nkeys, int nargs, const char **argv,
    const size_t *lens)
{
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
	struct reply *r;
	int i, n = nkeys + nargs;

	if (n > SCRIPT_MAX_ARGS) {
		failure_set(server_failure_rw(s), RL_EXIT_PROTOCOL,
		    "%s: too many arguments", sc->name);
		return NULL;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	av[0] = evalsha;
	al[0] = strlen(evalsha);
	av[1] = sc->sha;
	al[1] = strlen(sc->sha);
	av[2] = nk;
	al[2] = strlen(nk);
	for (i = 0; i < n; i++) {
		av[3 + i] = argv[i];
		al[3 + i] = lens[i];
	}
	r = server_command(s, 3 + n, av, al);
	if (r == NULL || r->type != REPLY_ERROR ||
	    strncmp(r->str, "NOSCRIPT", 8) != 0)
		return r;
	reply_free(r);
	av[0] = eval;
	al[0] = strlen(eval);
	av[1] = sc->body;
	al[1] = sc->len;
	return server_command(s, 3 + n, av, al);
}

struct reply *
script_run(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char **argv, const size_t *lens)
{
	return run(s, "EVALSHA", "EVAL", sc, nkeys, nargs, argv, lens);
}

struct reply *
script_run_ro(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char **argv, const size_t *lens)
{
	struct reply *r;

	r = run(s, "EVALSHA_RO", "EVAL_RO", sc, nkeys, nargs, argv, lens);
	/* Redis 6 has no _RO forms (an ACL may also leave them out). */
	if (r != NULL && (error_has(r, "unknown command") ||
	    (error_has(r, "NOPERM") && error_has(r, "_ro")))) {
		reply_free(r);
		return script_run(s, sc, nkeys, nargs, argv, lens);
	}
	return r;
}
