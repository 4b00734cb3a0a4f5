/* SPDX-License-Identifier: MIT */
/* The run mode, start to end: connect, (re-)enter or wait, supervise. */
#ifndef RLOCK_RUN_H
#define RLOCK_RUN_H

#include "cli.h"

/* Returns rlock's exit status; sigfd from sig_setup. */
int run_mode(struct rlock_opts *o, int sigfd);

/* Parse o->url into cfg (and take o's password); 0 or 64 with a
 * message. Shared by every mode that talks to Redis. */
struct conn_cfg;
int run_conn_cfg(const struct rlock_opts *o, struct conn_cfg *cfg);

/* Free what run_conn_cfg filled in. */
void run_conn_cfg_free(struct conn_cfg *cfg);

/* The one-line message for a failed connection or command, by status. */
void run_report_conn_error(const struct conn_cfg *cfg, int status,
    const char *err);

#endif
