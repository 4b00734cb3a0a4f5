/* SPDX-License-Identifier: MIT */
/* A script call's keys and arguments by name; see script_args.h. */
#include "script_args.h"

#include <stdlib.h>
#include <string.h>

void
script_args_init(struct script_args *a, const struct lua_script *sc)
{
	a->sc = sc;
	a->nkeys = a->nargs = 0;
	a->given = 0;
}

static void
put(struct script_args *a, int i, const char *s, size_t len)
{
	a->v[i] = s;
	a->len[i] = len;
	a->given |= 1UL << i;
}

void
script_key(struct script_args *a, int name, const char *s, size_t len)
{
	if (name < 0 || name >= a->sc->nkeys)
		abort();
	put(a, name, s, len);
}

void
script_arg(struct script_args *a, int name, const char *s, size_t len)
{
	if (name < 0 || name >= a->sc->nargs)
		abort();
	put(a, a->sc->nkeys + name, s, len);
}

void
script_arg_str(struct script_args *a, int name, const char *s)
{
	script_arg(a, name, s, strlen(s));
}

/* How many of the n names from v[from] are given: all up to the first
 * not given, at least min, none after it. */
static int
given(const struct script_args *a, int from, int n, int min)
{
	int i, k = 0;

	while (k < n && (a->given >> (from + k) & 1))
		k++;
	for (i = k; i < n; i++)
		if (a->given >> (from + i) & 1)
			abort();
	if (k < min)
		abort();
	return k;
}

void
script_args_done(struct script_args *a)
{
	const struct lua_script *sc = a->sc;

	a->nkeys = given(a, 0, sc->nkeys, sc->nkeys_min);
	a->nargs = given(a, sc->nkeys, sc->nargs, sc->nargs_min);
	if (a->nkeys == sc->nkeys)
		return;
	memmove(a->v + a->nkeys, a->v + sc->nkeys,
	    (size_t)a->nargs * sizeof(a->v[0]));
	memmove(a->len + a->nkeys, a->len + sc->nkeys,
	    (size_t)a->nargs * sizeof(a->len[0]));
}
