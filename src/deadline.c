// SPDX-License-Identifier: MIT
/* poll()'s timeout for a deadline; see deadline.h. */
#include "deadline.h"

#include "util.h"

int
deadline_poll_ms(int64_t until)
{
	int64_t left = until - mono_ms();

	if (left <= 0)
		return 0;
	return (int)(left > DEADLINE_POLL_MAX_MS ? DEADLINE_POLL_MAX_MS :
	    left);
}
