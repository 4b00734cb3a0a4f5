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

/*
 * Once, before any connection and any thread, for a mode that talks to
 * Redis: TLS's shared context when o's URLs or --tls ask for it (a
 * certificate or key that cannot be used is the user's to fix, like a bad
 * option). 0, or an exit status with a one-line reason in err.
 */
int config_start(const struct rlock_opts *o, char *err, size_t errlen);

/* Undo config_start; harmless without it. */
void config_end(void);

/* The TLS library for --version ("OpenSSL 3.0.11 19 Sep 2023"). */
const char *config_tls_library(void);

#endif
