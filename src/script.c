// SPDX-License-Identifier: MIT
/* EVALSHA with the NOSCRIPT fallback; see script.h. */
#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"

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

/* EVALSHA (or evalsha: its _RO form) sha nkeys args... into av/al; their
 * count, or -1 when there are too many arguments (failure recorded). */
static int
evalsha_argv(struct server *s, const char *evalsha,
    const struct lua_script *sc, int nkeys, int nargs, const char *const *argv,
    const size_t *lens, char *nk, size_t nklen, const char **av, size_t *al)
{
	int i, n = nkeys + nargs;

	if (n > SCRIPT_MAX_ARGS) {
		failure_set(server_failure_rw(s), RL_EXIT_PROTOCOL,
		    "%s: too many arguments", sc->name);
		return -1;
	}
	snprintf(nk, nklen, "%d", nkeys);
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
	return 3 + n;
}

/* A script call's command line, with room for the most arguments. */
struct eval_argv {
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
};

/* eval ("EVAL" or "EVAL_RO") with the script's text into e: the count,
 * or -1 (as evalsha_argv). */
static int
text_argv(struct server *s, const char *eval, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens,
    struct eval_argv *e)
{
	int n = evalsha_argv(s, eval, sc, nkeys, nargs, argv, lens, e->nk,
	    sizeof(e->nk), e->av, e->al);

	if (n >= 0) {
		e->av[1] = sc->body;
		e->al[1] = sc->len;
	}
	return n;
}

/* For a server that said NOSCRIPT (the text also caches it for the next
 * EVALSHA). */
static struct reply *
run_text(struct server *s, const char *eval, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens)
{
	struct eval_argv e;
	int n = text_argv(s, eval, sc, nkeys, nargs, argv, lens, &e);

	return n < 0 ? NULL : server_command(s, n, e.av, e.al);
}

/* evalsha, then eval on NOSCRIPT: "EVALSHA"/"EVAL" or their _RO forms. */
static struct reply *
run(struct server *s, const char *evalsha, const char *eval,
    const struct lua_script *sc, int nkeys, int nargs, const char *const *argv,
    const size_t *lens)
{
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
	struct reply *r;
	int n;

	if ((n = evalsha_argv(s, evalsha, sc, nkeys, nargs, argv, lens, nk,
	    sizeof(nk), av, al)) < 0)
		return NULL;
	r = server_command(s, n, av, al);
	if (r == NULL || !is_noscript(r))
		return r;
	reply_free(r);
	return run_text(s, eval, sc, nkeys, nargs, argv, lens);
}

struct reply *
script_run(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char *const *argv, const size_t *lens)
{
	return run(s, "EVALSHA", "EVAL", sc, nkeys, nargs, argv, lens);
}

struct reply *
script_run_ro(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char *const *argv, const size_t *lens)
{
	struct reply *r;

	r = run(s, "EVALSHA_RO", "EVAL_RO", sc, nkeys, nargs, argv, lens);
	/* A proxy that does not take them (twemproxy) closes the
	 * connection on them: a new one, without (a restart would have
	 * closed it as well; the script only reads, either way). */
	if (r == NULL && server_failure(s)->kind == FAIL_DROPPED &&
	    (strcmp(server_failure(s)->closed_on, "EVALSHA_RO") == 0 ||
	    strcmp(server_failure(s)->closed_on, "EVAL_RO") == 0))
		return script_run(s, sc, nkeys, nargs, argv, lens);
	/* Redis 6 has no _RO forms (an ACL may also leave them out). */
	if (r != NULL && (error_has(r, "unknown command") ||
	    (error_has(r, "NOPERM") && error_has(r, "_ro")))) {
		reply_free(r);
		return script_run(s, sc, nkeys, nargs, argv, lens);
	}
	return r;
}

int
script_send(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char *const *argv, const size_t *lens)
{
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
	int n;

	if ((n = evalsha_argv(s, "EVALSHA", sc, nkeys, nargs, argv, lens, nk,
	    sizeof(nk), av, al)) < 0)
		return -1;
	return server_send(s, n, av, al);
}

struct reply *
script_recv(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char *const *argv, const size_t *lens, int64_t deadline)
{
	struct reply *r = server_reply(s, deadline, "EVALSHA");

	if (r == NULL)
		return NULL;
	/* A script cache emptied by a restart: the text at once (asking
	 * EVALSHA again only heard NOSCRIPT again, a round trip lost on every
	 * fresh server). A Cluster slot that moved (s then knows where to
	 * go): as script_run, from the start. */
	if (is_noscript(r)) {
		reply_free(r);
		return run_text(s, "EVAL", sc, nkeys, nargs, argv, lens);
	}
	if (server_take_redirect(s, r)) {
		reply_free(r);
		return script_run(s, sc, nkeys, nargs, argv, lens);
	}
	return r;
}

struct reply *
script_call(struct server *s, const struct script_args *a)
{
	return script_run(s, a->sc, a->nkeys, a->nargs, a->v, a->len);
}

struct reply *
script_call_ro(struct server *s, const struct script_args *a)
{
	return script_run_ro(s, a->sc, a->nkeys, a->nargs, a->v, a->len);
}
