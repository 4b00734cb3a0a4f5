/* SPDX-License-Identifier: MIT */
/*
 * Running the embedded Lua scripts on one server: EVALSHA first, EVAL
 * when the server answers NOSCRIPT (a restart, a failover, SCRIPT FLUSH:
 * the script cache is neither persisted nor replicated).
 */
#ifndef RLOCK_SCRIPT_H
#define RLOCK_SCRIPT_H

#include <stddef.h>

#include "reply.h"
#include "server.h"

struct lua_script {
	const char *name;
	const char *body;
	size_t len;
	const char *sha;	/* sha1 of body, hex */
};

#define SCRIPT_MAX_ARGS 24

/*
 * Run sc with nkeys keys then nargs args (binary-safe). Returns the reply,
 * error replies included (caller frees), or NULL on I/O failure (s
 * closed, failure recorded).
 */
struct reply *script_run(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char **argv, const size_t *lens);

/*
 * The same for a script that only reads: EVALSHA_RO and EVAL_RO, so a
 * server under CLIENT PAUSE WRITE answers at once (an EVALSHA of a script
 * it has not cached yet waits out the pause: Redis cannot know that the
 * script only reads). Where these do not exist (Redis 6), script_run.
 */
struct reply *script_run_ro(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char **argv, const size_t *lens);

#endif
