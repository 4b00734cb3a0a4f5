/* SPDX-License-Identifier: MIT */
/*
 * The exit-status table of the contract, in one place. Names follow
 * <sysexits.h> where it fits and say what rlock means where it does not
 * (70 is "lease lost", not "internal software error").
 */
#ifndef RLOCK_EXITCODE_H
#define RLOCK_EXITCODE_H

#define RL_EXIT_OK		0
#define RL_EXIT_FALSE		1	/* status: a KEY free; release: none */
#define RL_EXIT_USAGE		64	/* EX_USAGE */
#define RL_EXIT_UNAVAILABLE	69	/* EX_UNAVAILABLE: Redis unreachable */
#define RL_EXIT_LEASE_LOST	70	/* EX_SOFTWARE, meaning lease lost */
#define RL_EXIT_OSERR		71	/* EX_OSERR: no fork, pipe, memory */
#define RL_EXIT_IOERR		74	/* EX_IOERR: stdout unwritable */
#define RL_EXIT_NOT_OBTAINED	75	/* EX_TEMPFAIL; -E overrides */
#define RL_EXIT_PROTOCOL	76	/* EX_PROTOCOL: unusable answer */
#define RL_EXIT_NOPERM		77	/* EX_NOPERM: credentials refused */
#define RL_EXIT_CONFIG		78	/* EX_CONFIG: unusable config file */
#define RL_EXIT_MAX_HOLD	124	/* --max-hold stopped COMMAND */
#define RL_EXIT_EXEC_NOEXEC	126	/* COMMAND not executable */
#define RL_EXIT_EXEC_NOENT	127	/* COMMAND not found */
#define RL_EXIT_SIGNAL_BASE	128	/* 128+N: killed by / got signal N */

#endif
