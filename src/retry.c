// SPDX-License-Identifier: MIT
/* Which failures a waiter retries, and how soon; see retry.h. */
#include "retry.h"


#define RETRY_BACKOFF_FIRST_MS 100

int64_t
retry_backoff_ms(int n)
{
	int64_t ms = RETRY_BACKOFF_FIRST_MS;

	while (n-- > 0 && ms < RETRY_BACKOFF_MAX_MS)
		ms *= 2;
	return ms < RETRY_BACKOFF_MAX_MS ? ms : RETRY_BACKOFF_MAX_MS;
}
