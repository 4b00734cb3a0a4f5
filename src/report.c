// SPDX-License-Identifier: MIT
/* Operator subcommands; see report.h. */
#include "report.h"

#include "exitcode.h"
#include "util.h"

int
report_main(const struct rlock_opts *o)
{
	(void)o;
	msg_err("this subcommand is not built yet");
	return RL_EXIT_USAGE;
}
