/* SPDX-License-Identifier: MIT */
/*
 * Script sections: `rlock lock` leaves a holder process that keeps KEY
 * for its owner, the shell that took it, under supervise.c as a run's
 * COMMAND is; `rlock unlock` and nested runs find it by that owner.
 */
#ifndef RLOCK_SECTION_H
#define RLOCK_SECTION_H

#include "cli.h"
#include "lock.h"
#include "supervise.h"
#include "wait.h"

/* rlock lock, before anything else: settle o->owner; 0, or 64. */
int section_owner(struct rlock_opts *o);

/*
 * KEY is granted (res): leave a holder for the owner, which takes over
 * a's watcher. The caller exits with the holder's answer (0 held, or why
 * not) and prints --export's line; the holder returns when the section
 * is over, with its status.
 */
int section_hold(const struct rlock_opts *o, struct lock_ctx *ctx,
    struct lock *l, int sigfd, const struct wait_result *res,
    struct sup_ahead *a);

/* rlock unlock: 0 released, 1 no such section of ours, 70 lease lost. */
int section_unlock(const struct rlock_opts *o);

/* KEY held by a section of one of our ancestors: put its RLOCK_KEY,
 * RLOCK_TOKEN and RLOCK_FENCE in our environment; 0, or -1 none. */
int section_env(const char *key);

/* --export's line on stdout, each value shell-quoted. */
void section_export(const char *key, const char *token, const char *fence);

#endif
