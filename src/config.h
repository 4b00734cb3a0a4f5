/* SPDX-License-Identifier: MIT */
/*
 * From the user's options to what the lock layer opens (one URL, or the
 * --redlock masters, with passwords and timeouts), and the one message for
 * a failure to reach or use them. Shared by every mode that talks to Redis.
 */
#ifndef RLOCK_CONFIG_H
#define RLOCK_CONFIG_H

#include "cli.h"
#include "lock.h"
#include "reply.h"

/* Fill cfg from o's URLs as cli.c parsed them (o's password is used, not
 * copied). Free with lock_cfg_free. */
void config_lock(const struct rlock_opts *o, struct lock_cfg *cfg);

/*
 * The one-line message for a failure f on cfg's server(s), by status.
 * answered: the server(s) answered this run before, so the URL is right
 * and the line does not send the user to check it.
 */
void config_report(const struct lock_cfg *cfg, const struct failure *f,
    int answered);

#endif
