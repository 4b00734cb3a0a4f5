// SPDX-License-Identifier: MIT
/* The look at a foreign holder; see foreign.h. */
#include "foreign.h"

int
foreign_look(struct conn *cn, const struct lock_keys *k)
{
	const char *argv[3] = { "EXISTS", k->lock, k->meta };
	size_t lens[3] = { 6, k->lock_len, k->meta_len };
	redisReply *r;
	int still;

	if ((r = conn_command(cn, 3, argv, lens)) == NULL)
		return -1;
	/* 2: rlock's holder now, 0: gone. 1 is the lock alone (a meta left
	 * without its lock cannot outlive the lease it shares). */
	still = r->type == REDIS_REPLY_INTEGER ? r->integer == 1 : -1;
	if (still < 0)
		conn_fail_reply(cn, "EXISTS", r);
	freeReplyObject(r);
	return still;
}
