/* SPDX-License-Identifier: MIT */
/*
 * One KEY as `rlock status` and `rlock list` show it: read in one script
 * call (inspect.lua, which writes nothing), then printed as text or JSON.
 * Used by report.c only. Prints on stdout, never on stderr.
 */
#ifndef RLOCK_REPORT_VIEW_H
#define RLOCK_REPORT_VIEW_H

#include <stddef.h>

#include "lock.h"
#include "view.h"

struct lock_mode;	/* mode.h */

/*
 * Fill v (v->key, v->keylen set by the caller) from inspect.lua: 0, or -1
 * with the failure recorded in node. v->r is then the caller's to free
 * (report_view_free_all).
 */
int report_view_inspect(struct lock_node *node, const struct lock_mode *mode,
    const char *prefix, struct view *v);

/*
 * Check the whole shape of inspect.lua's reply r, then fill v's fields
 * from it (all but key, keylen and r; holders and waiters point into r,
 * which stays the caller's). 0, or -1 if r is not such a reply. Apart
 * from the connection so it can be tested and fuzzed alone.
 */
int report_view_parse(struct view *v, const struct reply *r);

/* Free the replies of n views, and their keys if own_keys; then v. */
void report_view_free_all(struct view *v, size_t n, int own_keys);

/* The --json array of n views (schema: report.c). */
void report_view_print_json(const struct view *v, size_t n);

/* status's block for one KEY; list's line for one held KEY. */
void report_view_print_text(const struct view *v);
void report_view_print_line(const struct view *v);

#endif
