/* SPDX-License-Identifier: MIT */
/*
 * Running the embedded Lua scripts on one server: EVALSHA first, EVAL
 * when the server answers NOSCRIPT (a restart, a failover, SCRIPT FLUSH:
 * the script cache is neither persisted nor replicated).
 */
#ifndef RLOCK_SCRIPT_H
#define RLOCK_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "server.h"

struct lua_script {
	const char *name;
	const char *body;
	size_t len;
	const char *sha;	/* sha1 of body, hex */
	int nkeys, nargs;	/* the names in its KEYS and ARGV headers */
	int nkeys_min, nargs_min;	/* those a call always gives */
};

/* The most keys and arguments a script takes together (the generated
 * lua_scripts.c checks each against it). */
#define SCRIPT_MAX_ARGS 40

/*
 * One call's keys and arguments, each put where its name in the script's
 * header says (lua_scripts.h: SCRIPT_K_NAME, SCRIPT_A_NAME). Binary-safe;
 * nothing is copied, so what they point to must outlive the call.
 */
struct script_args {
	const struct lua_script *sc;
	const char *v[SCRIPT_MAX_ARGS];	/* keys, then arguments */
	size_t len[SCRIPT_MAX_ARGS];
	int nkeys, nargs;	/* as given (after script_args_done) */
	unsigned long given;	/* bit i: v[i] given */
};

void script_args_init(struct script_args *a, const struct lua_script *sc);
void script_key(struct script_args *a, int name, const char *s, size_t len);
void script_arg(struct script_args *a, int name, const char *s, size_t len);
void script_arg_str(struct script_args *a, int name, const char *s);

/*
 * Close a call: the keys given, then the arguments given, made one list
 * (an optional key left out moves the arguments down). A required name
 * not given, or one given after a gap, is a bug in rlock: it aborts.
 */
void script_args_done(struct script_args *a);

/* script_run and script_run_ro on a closed call. */
struct reply *script_call(struct server *s, const struct script_args *a);
struct reply *script_call_ro(struct server *s, const struct script_args *a);

/*
 * Run sc with nkeys keys then nargs args (binary-safe). Returns the reply,
 * error replies included (caller frees), or NULL on I/O failure (s
 * closed, failure recorded).
 */
struct reply *script_run(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens);

/*
 * The same for a script that only reads: EVALSHA_RO and EVAL_RO, so a
 * server under CLIENT PAUSE WRITE answers at once (an EVALSHA of a script
 * it has not cached yet waits out the pause: Redis cannot know that the
 * script only reads). Where these do not exist (Redis 6), script_run.
 */
struct reply *script_run_ro(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens);

/*
 * While the server's login is owed (server_hello_owed): keep the script
 * (its text, as EVAL: the server may not have it cached) to take back
 * what the commands sent behind the login do, should the login fail.
 */
void script_arm_undo(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens);

/*
 * The two halves of script_run, so that several servers run a script at
 * once (--redlock): script_send writes the EVALSHA and returns (0, or -1
 * with s closed and the failure recorded); script_recv reads its reply by
 * `deadline` (mono ms), given the same arguments again. A reply that
 * cannot be used as it is (NOSCRIPT, or a redirect) makes script_recv run
 * the script again at once, as script_run would. Past the deadline: NULL,
 * s closed (its socket reset) and the failure recorded, as for a timeout.
 */
int script_send(struct server *s, const struct lua_script *sc, int nkeys,
    int nargs, const char *const *argv, const size_t *lens);
struct reply *script_recv(struct server *s, const struct lua_script *sc,
    int nkeys, int nargs, const char *const *argv, const size_t *lens,
    int64_t deadline);

#endif
