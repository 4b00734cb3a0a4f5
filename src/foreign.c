// SPDX-License-Identifier: MIT
/* The look at a foreign holder; see foreign.h. */
#include "foreign.h"

int
foreign_look(struct server *s, const struct lock_keys *k)
{
	const char *argv[3] = { "EXISTS", k->lock, k->meta };
	size_t lens[3] = { 6, k->lock_len, k->meta_len };
	struct reply *r;
	long long n;
	int still;

	if ((r = server_command(s, 3, argv, lens)) == NULL)
		return -1;
	/* 2: rlock's holder now, 0: gone. 1 is the lock alone (a meta left
	 * without its lock cannot outlive the lease it shares). */
	if (reply_int(r, &n) < 0) {
		server_fail_reply(s, "EXISTS", r);
		still = -1;
	} else {
		still = n == 1;
	}
	reply_free(r);
	return still;
}
