/* SPDX-License-Identifier: MIT */
/*
 * What `rlock status` shows about runs rather than holders: the last
 * finished run of KEY and the runs skipped since (P{KEY}:last), and a
 * holder whose run ended while --min-hold keeps KEY. Text and JSON here;
 * the Prometheus form is report_prom.c's. Prints on stdout only.
 */
#ifndef RLOCK_REPORT_RUN_H
#define RLOCK_REPORT_RUN_H

#include "view.h"

/* A holder's JSON members after "fence": ,"finished":...,"skips":N. */
void report_run_json_holder(const struct view *v, const struct reply *h);

/* The view's JSON member ,"last_run": null or the object (report.c). */
void report_run_json_last(const struct view *v);

/*
 * The holder block's lines for a run that ended while --min-hold keeps
 * KEY ("run ended", "held until"); returns 1 if it printed them (the
 * lease line would then only repeat the hold), else 0.
 */
int report_run_text_holder(const struct view *v, const struct reply *h);

/* "skipped N runs, the last ..." for the grant whose fence is f. */
void report_run_text_skips(const struct view *v, const struct reply *f);

/* The same for holder h, unless its run is the last run (shown there). */
void report_run_text_holder_skips(const struct view *v, const struct reply *h);

/* The "last run" block of a KEY, if one is recorded. */
void report_run_text_last(const struct view *v);

#endif
