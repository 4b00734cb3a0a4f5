/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a holder that is not rlock (a redis-py or node-redlock lock
 * on P{KEY}, without :meta). Its release wakes nobody, so its waiters look
 * every FOREIGN_LOOK_MS (lockres.h) whether it is gone, through the lock
 * (lock_look_foreign): one EXISTS each, the cheapest command
 * that tells "gone" and "rlock's now" from "still foreign". rlock's own
 * holders still wake their waiters, who do not look.
 */
#ifndef RLOCK_FOREIGN_H
#define RLOCK_FOREIGN_H

#include "keys.h"
#include "server.h"

/*
 * Is KEY still held by a client other than rlock, on s? 1 yes (P{KEY}
 * without its :meta); 0 no: free, or held by rlock now (an attempt will
 * tell); -1 on a failure (recorded in s), for which an attempt is as good
 * a next step.
 */
int foreign_look(struct server *s, const struct lock_keys *k);

#endif
