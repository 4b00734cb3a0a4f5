// SPDX-License-Identifier: MIT
/* EVALSHA with the NOSCRIPT fallback; see script.h. */
#include "script.h"

#include <stdio.h>
#include <string.h>

redisReply *
script_run(struct conn *cn, const struct lua_script *s, int nkeys,
    int nargs, const char **argv, const size_t *lens)
{
	const char *av[3 + SCRIPT_MAX_ARGS];
	size_t al[3 + SCRIPT_MAX_ARGS];
	char nk[16];
	redisReply *r;
	int i, n = nkeys + nargs;

	if (n > SCRIPT_MAX_ARGS)
		return NULL;
	snprintf(nk, sizeof(nk), "%d", nkeys);
	av[0] = "EVALSHA";
	al[0] = 7;
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
	av[0] = "EVAL";
	al[0] = 4;
	av[1] = s->body;
	al[1] = s->len;
	return conn_command(cn, 3 + n, av, al);
}
