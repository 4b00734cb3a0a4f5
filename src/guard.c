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

int
guard_eviction(struct conn *cn)
{
	const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
	size_t lens[3] = { 6, 3, 16 };
	redisReply *r, *v;
	int i, warned = 0;

	/* --redlock: the first master that may evict is worth the line. */
	for (i = 0; cn->peers && i < cn->cfg->npeers && !warned; i++)
		if (cn->peers[i].c != NULL)
			warned = guard_eviction(&cn->peers[i]);
	if (cn->cfg->npeers)
		return warned;
	if ((r = conn_command(cn, 3, argv, lens)) == NULL)
		return 0;
	/* Managed services block CONFIG (renamed, or not in the ACL): that
	 * costs the warning, and a line with -v, nothing more. */
	if (r->type == REDIS_REPLY_ERROR)
		msg_verbose("cannot check the server's maxmemory-policy (CONFIG "
		    "GET: %.80s); it must be noeviction", r->str);
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    (v = r->element[1])->type == REDIS_REPLY_STRING &&
	    strcmp(v->str, "noeviction") != 0 && ++warned)
		msg_warn("the server's maxmemory-policy is %s: under memory "
		    "pressure Redis may evict lock keys and grant a lock "
		    "twice; set maxmemory-policy noeviction", v->str);
	freeReplyObject(r);
	return warned;
}
