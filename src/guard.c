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

/* --redlock takes at most this many masters. */
#define GUARD_MAX_SERVERS 9

/* 1 if r, CONFIG GET maxmemory-policy's reply, says the server may evict
 * (and we said so), else 0. */
static int
may_evict(const struct reply *r)
{
	const struct reply *v;

	/* Managed services block CONFIG (renamed, or not in the ACL): that
	 * costs the warning, and a line with -v, nothing more. */
	if (r->type == REPLY_ERROR)
		msg_verbose("cannot check the server's maxmemory-policy (CONFIG "
		    "GET: %.80s); it must be noeviction", r->str);
	if (r->type == REPLY_ARRAY && r->elements == 2 &&
	    (v = r->element[1])->type == REPLY_STRING &&
	    strcmp(v->str, "noeviction") != 0) {
		msg_warn("the server's maxmemory-policy is %s: under memory "
		    "pressure Redis may evict lock keys and grant a lock "
		    "twice; set maxmemory-policy noeviction", v->str);
		return 1;
	}
	return 0;
}

/*
 * Every server is asked at once (--redlock: all the masters, then their
 * answers read, each within its command timeout), so a quorum pays one
 * round trip for this, not one per master.
 */
int
guard_eviction(struct lock *l)
{
	const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
	size_t lens[3] = { 6, 3, 16 };
	unsigned char sent[GUARD_MAX_SERVERS];
	int i, n = lock_servers(l), warned = 0;
	struct server *s;
	struct reply *r;

	if (n > GUARD_MAX_SERVERS)
		n = GUARD_MAX_SERVERS;
	for (i = 0; i < n; i++) {
		s = lock_server(l, i);
		sent[i] = server_is_open(s) && server_send(s, 3, argv,
		    lens) == 0;
	}
	/* --redlock: the first master that may evict is worth the line. */
	for (i = 0; i < n; i++) {
		if (!sent[i])
			continue;
		s = lock_server(l, i);
		r = server_reply(s, mono_ms() + server_cmd_timeout(s),
		    "CONFIG");
		if (r != NULL && !warned)
			warned = may_evict(r);
		reply_free(r);
	}
	return warned;
}
