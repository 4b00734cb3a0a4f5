/* SPDX-License-Identifier: MIT */
/*
 * Every rule that turns the lease (--lease, ms) into a time, in one place,
 * with its reason. All times are CLOCK_MONOTONIC on our side; Redis
 * counts the lease from when it ran the script, which is after we sent it.
 */
#ifndef RLOCK_LEASE_H
#define RLOCK_LEASE_H

#include <stdint.h>

static inline int64_t
lease_clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Redlock's clock-drift allowance: Redis expires keys by its wall clock,
 * we count on our monotonic one; 1% of the lease plus 2 ms covers the
 * rate difference and the timer granularity on both sides.
 */
static inline int64_t
lease_drift_ms(int64_t lease)
{
	return lease / 100 + 2;
}

/*
 * The holder's deadline: Redis may expire the lock at last_ok + lease,
 * where last_ok is when our last successful extend was *sent*; we stop
 * counting on it a drift margin earlier.
 */
static inline int64_t
lease_deadline(int64_t last_ok, int64_t lease)
{
	return last_ok + lease - lease_drift_ms(lease);
}

/*
 * Under --max-hold the last extends reach hold_until only (INT64_MAX:
 * no bound): the deadline is then the earlier of the two.
 */
static inline int64_t
lease_held_deadline(int64_t last_ok, int64_t lease, int64_t hold_until)
{
	int64_t dl = lease_deadline(last_ok, lease);
	int64_t cap = hold_until - lease_drift_ms(lease);

	return cap < dl ? cap : dl;
}

/*
 * Extend every third of the lease: two more tries fit before the
 * deadline, so one lost extend (a timeout, a reconnect) costs nothing.
 */
static inline int64_t
lease_renew_interval_ms(int64_t lease)
{
	return lease / 3;
}

/*
 * A renewal thread made while waiting sleeps until the grant and looks
 * for it every sixth of the lease (between 1 ms and a minute): a grant
 * seen at its next look is then still seen before its first extend is
 * due, a third of the lease after it, and nobody has to wake the thread
 * (a wake-up would cost the waiter time on its way to COMMAND).
 */
static inline int64_t
lease_park_look_ms(int64_t lease)
{
	return lease_clamp(lease_renew_interval_ms(lease) / 2, 1, 60000);
}

/*
 * Except a grant already older than that when the thread is armed at
 * `now` (an attempt sent behind a BLPOP counts from its send): its next
 * look could come after the first extend is due, so it must be woken.
 */
static inline int
lease_park_wake(int64_t now, int64_t granted_at, int64_t lease)
{
	return now + lease_park_look_ms(lease) >=
	    granted_at + lease_renew_interval_ms(lease);
}

/*
 * One extend (or the confirmation of an old grant) may take a fifth of
 * the lease, never more than the user's --connect-timeout: several tries
 * then still fit before the deadline.
 */
static inline int64_t
lease_try_timeout_ms(int64_t lease, int64_t connect_timeout)
{
	return lease_clamp(lease / 5, 50, connect_timeout);
}

/*
 * After a failed extend, try again after a tenth of the lease, between
 * 50 ms and 1 s: an outage then costs Redis a handful of commands, not a
 * storm, and a short lease still gets several tries.
 */
static inline int64_t
lease_retry_ms(int64_t lease)
{
	return lease_clamp(lease / 10, 50, 1000);
}

/*
 * --on-lost term: SIGTERM goes out --kill-after before the deadline, so
 * the SIGKILL still lands in time; a --kill-after longer than half of what
 * the lease leaves is shortened to that (two renewals' worth of warning).
 */
static inline int64_t
lease_kill_grace_ms(int64_t lease, int64_t kill_after)
{
	int64_t fit = (lease - lease_drift_ms(lease)) / 2;

	return kill_after < fit ? kill_after : fit;
}

/*
 * --redlock: each master's connect and command timeouts are a thirtieth
 * of the lease (50 ms at least, --connect-timeout at most), so one stalled
 * master cannot eat the validity time of the rest (Redis docs: "5-50 ms"
 * for a 10 s lease).
 */
static inline int64_t
lease_master_timeout_ms(int64_t lease, int64_t connect_timeout)
{
	return lease_clamp(lease / 30, 50, connect_timeout);
}

#endif
