/* SPDX-License-Identifier: MIT */
/*
 * The operator's subcommands: status, list and release --force, with
 * their text and --json output.
 */
#ifndef RLOCK_REPORT_H
#define RLOCK_REPORT_H

#include "cli.h"

/* Run o->mode (MODE_STATUS, MODE_LIST or MODE_RELEASE); exit status. */
int report_main(const struct rlock_opts *o);

#endif
