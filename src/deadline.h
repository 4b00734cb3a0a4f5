/* SPDX-License-Identifier: MIT */
/*
 * poll()'s timeout for a deadline on the monotonic clock, for every wait
 * that polls. A leaf: it uses util.h's clock and nothing else.
 */
#ifndef RLOCK_DEADLINE_H
#define RLOCK_DEADLINE_H

#include <stdint.h>

/* The longest single poll(): a longer wait polls again, so that the
 * timeout fits an int whatever the deadline. */
#define DEADLINE_POLL_MAX_MS 60000

/* Milliseconds from now until `until` (mono ms), as poll() takes them: 0
 * once it passed, at most DEADLINE_POLL_MAX_MS. */
int deadline_poll_ms(int64_t until);

#endif
