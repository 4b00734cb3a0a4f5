/* SPDX-License-Identifier: MIT */
/*
 * Running the embedded Lua scripts on one server: EVALSHA first, EVAL
 * when the server answers NOSCRIPT (a restart, a failover, SCRIPT FLUSH:
 * the script cache is neither persisted nor replicated).
 */
#ifndef RLOCK_SCRIPT_H
#define RLOCK_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "reply.h"
#include "script_args.h"
#include "server.h"

/*
 * Run a closed call (script_args_done): its script with its keys and
 * arguments (binary-safe). Returns the reply, error replies included
 * (caller frees), or NULL on I/O failure (s closed, failure recorded).
 */
struct reply *script_call(struct server *s, const struct script_args *a);

/*
 * The same for a script that only reads: EVALSHA_RO and EVAL_RO, so a
 * server under CLIENT PAUSE WRITE answers at once (an EVALSHA of a script
 * it has not cached yet waits out the pause: Redis cannot know that the
 * script only reads). Where these do not exist (Redis 6), script_call.
 */
struct reply *script_call_ro(struct server *s, const struct script_args *a);

/*
 * The two halves of script_call, so that several servers run a script at
 * once (--redlock): script_send writes the EVALSHA and returns (0, or -1
 * with s closed and the failure recorded); script_recv reads its reply by
 * `deadline` (mono ms), given the same call again. A reply that cannot be
 * used as it is (NOSCRIPT, or a redirect) makes script_recv run the
 * script again at once, as script_call would. Past the deadline: NULL, s
 * closed (its socket reset) and the failure recorded, as for a timeout.
 */
int script_send(struct server *s, const struct script_args *a);
struct reply *script_recv(struct server *s, const struct script_args *a,
    int64_t deadline);

#endif
