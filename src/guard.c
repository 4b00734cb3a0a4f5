// SPDX-License-Identifier: MIT
/*
 * An evicted lock key is a lock silently granted twice, and the volatile-*
 * policies evict precisely the keys that have a TTL, which every rlock key
 * has. Redis reports nothing when it evicts, so this is the only place the
 * user can learn of it.
 */
#include "guard.h"

#include <string.h>

#include "util.h"

/* 1 if s says it may evict (and we said so), else 0. */
static int
may_evict(struct server *s)
{
	const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
	size_t lens[3] = { 6, 3, 16 };
	struct reply *r, *v;
	int warned = 0;

	if ((r = server_command(s, 3, argv, lens)) == NULL)
		return 0;
	if (r->type == REPLY_ARRAY && r->elements == 2 &&
	    (v = r->element[1])->type == REPLY_STRING &&
	    strcmp(v->str, "noeviction") != 0 && ++warned)
		msg_warn("the server's maxmemory-policy is %s: under memory "
		    "pressure Redis may evict lock keys and grant a lock "
		    "twice; set maxmemory-policy noeviction", v->str);
	reply_free(r);
	return warned;
}

int
guard_eviction(struct lock *l)
{
	int i, n = lock_servers(l);

	/* --redlock: the first master that may evict is worth the line. */
	for (i = 0; i < n; i++)
		if (server_is_open(lock_server(l, i)) &&
		    may_evict(lock_server(l, i)))
			return 1;
	return 0;
}
