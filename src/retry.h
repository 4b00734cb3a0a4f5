/* SPDX-License-Identifier: MIT */
/*
 * How long a waiter that rides out Redis's weather (the contract's
 * Weather; which failures are weather: failure_retry, reply.h) backs off
 * before its next try. Pure: no I/O, no clock.
 */
#ifndef RLOCK_RETRY_H
#define RLOCK_RETRY_H

#include <stdint.h>

/* The longest pause between two tries. */
#define RETRY_BACKOFF_MAX_MS 1000

/* The pause before try n+1 of a run of failed ones (n from 0): doubling
 * from 100 ms up to RETRY_BACKOFF_MAX_MS. */
int64_t retry_backoff_ms(int n);

#endif
