/* SPDX-License-Identifier: MIT */
/*
 * One script call's keys and arguments, filled by the names the script's
 * header gives them (lua_scripts.h: SCRIPT_K_NAME, SCRIPT_A_NAME). Pure:
 * no I/O, so the layers above the lock build a call here and hand it to
 * the lock (lock_node_script) without seeing a server.
 */
#ifndef RLOCK_SCRIPT_ARGS_H
#define RLOCK_SCRIPT_ARGS_H

#include <stddef.h>

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

#endif
