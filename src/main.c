// SPDX-License-Identifier: MIT
/*
 * rlock: run a command while holding a lock in Redis. main() only picks
 * the mode and returns its status; see run.c, report.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "exitcode.h"
#include "lock.h"
#include "report.h"
#include "run.h"
#include "section.h"
#include "sig.h"
#include "util.h"

/*
 * A standard fd our caller closed (rlock ... 2>&-) must not be the next
 * one we open: the Redis socket on fd 2 would get our messages as
 * commands. Hold each with /dev/null opened the wrong way round, so I/O
 * on it still fails with EBADF as on a closed fd, and close-on-exec, so
 * COMMAND gets it closed, as we did.
 */
static void
hold_closed_std_fds(void)
{
	int fd, got;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		got = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) |
		    O_CLOEXEC);
		if (got >= 0 && got != fd)
			close(got);
	}
}

int
main(int argc, char **argv)
{
	struct rlock_opts o;
	char err[512];
	int sigfd, st;

	hold_closed_std_fds();
	/* Before any thread exists, so every thread inherits the mask. */
	if ((sigfd = sig_setup()) < 0) {
		msg_err("cannot set up signal handling: %s", strerror(errno));
		return RL_EXIT_OSERR;
	}
	if ((st = cli_parse(argc, argv, &o)) != 0) {
		cli_free(&o);
		return st;
	}
	/* Before any connection and any thread: a certificate or key that
	 * cannot be used is the user's to fix, like a bad option. */
	if (o.mode != MODE_HELP && o.mode != MODE_VERSION && o.mode !=
	    MODE_UNLOCK && (st = config_start(&o, err, sizeof(err))) != 0) {
		msg_err("%s", err);
		cli_free(&o);
		return st;
	}
	switch (o.mode) {
	case MODE_HELP:
		cli_usage();
		break;
	case MODE_VERSION:
		printf("rlock %s (%s, %s)\n", RLOCK_VERSION,
		    lock_protocol_library(), config_tls_library());
		break;
	case MODE_RUN:
	case MODE_LOCK:
		st = run_mode(&o, sigfd);
		break;
	case MODE_UNLOCK:
		st = section_unlock(&o);
		break;
	default:
		st = report_main(&o);
		break;
	}
	config_end();
	cli_free(&o);
	close(sigfd);
	return st;
}
