/* SPDX-License-Identifier: MIT */
/* The run mode, start to end: connect, (re-)enter or wait, supervise. */
#ifndef RLOCK_RUN_H
#define RLOCK_RUN_H

#include "cli.h"

/* Returns rlock's exit status; sigfd from sig_setup. */
int run_mode(struct rlock_opts *o, int sigfd);

#endif
