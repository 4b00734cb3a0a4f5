// SPDX-License-Identifier: MIT
/*
 * An evicted lock key is a lock silently granted twice, and the volatile-*
 * policies evict precisely the keys that have a TTL, which every rlock key
 * has. Redis reports nothing when it evicts, so this is the only place the
 * user can learn of it. -q does not hide the line: a cron line's -q keeps
 * its mail for trouble, and a lock that may be granted twice is trouble.
 */
#include "guard.h"

#include <string.h>

#include "util.h"

/* r: CONFIG GET maxmemory-policy's reply. --redlock: the first master
 * that may evict is worth the line. */
static void
on_policy(void *arg, const struct reply *r)
{
	struct guard *g = arg;
	const struct reply *v;

	if (g->warned)
		return;
	/* Managed services block CONFIG (renamed, or not in the ACL): that
	 * costs the warning, and a line with -v, nothing more. */
	if (r->type == REPLY_ERROR)
		msg_verbose("cannot check the server's maxmemory-policy "
		    "(CONFIG GET: %.80s); it must be noeviction", r->str);
	if (r->type == REPLY_ARRAY && r->elements == 2 &&
	    (v = r->element[1])->type == REPLY_STRING &&
	    strcmp(v->str, "noeviction") != 0) {
		msg_hazard("the server's maxmemory-policy is %s: under memory "
		    "pressure Redis may evict lock keys and grant a lock "
		    "twice; set maxmemory-policy noeviction", v->str);
		g->warned = 1;
	}
}

/*
 * The question rides ahead of the first command each server is asked
 * next (the acquire, or the re-entry check): pipelined, it costs no round
 * trip, and with --redlock every master is asked at once. A server that
 * closes first, or has no room for it, is not asked.
 */
void
guard_eviction(struct guard *g, struct lock *l)
{
	const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
	size_t lens[3] = { 6, 3, 16 };
	int i, n = lock_nodes(l);

	for (i = 0; i < n; i++)
		(void)lock_node_ask_ahead(lock_node(l, i), 3, argv, lens,
		    on_policy, g);
}

int
guard_refused(struct guard *g, const struct failure *f)
{
	/* Only our question sends CONFIG: closed on it, it was asked. */
	if (g->refused || !failure_closed_on(f, CMD_CONFIG))
		return 0;
	g->refused = 1;
	msg_verbose("cannot check the server's maxmemory-policy: the server "
	    "or a proxy in front of it refused CONFIG (it closed the "
	    "connection); going on without the check (it must be "
	    "noeviction)");
	return 1;
}
