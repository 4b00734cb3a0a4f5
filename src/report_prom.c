// SPDX-License-Identifier: MIT
/*
 * The Prometheus text exposition format (version 0.0.4) of status: each
 * metric family once, with its HELP and TYPE lines, then one sample per
 * KEY (label key, and master with --redlock). A KEY with no recorded run
 * has no sample in the last-run families: absent() tells a job that never
 * ran (or whose record expired, after 40 days) from one that ran.
 * Times are Unix seconds with milliseconds, by the Redis server's clock.
 */
#include "report_prom.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

enum family {
	F_HELD, F_RUNNING, F_LEASE_LEFT, F_WAITERS, F_SKIPS, F_START, F_END,
	F_DURATION, F_EXIT, F_LOST, F_OK, F_N
};

/* secs: the value is in ms, shown in seconds. */
static const struct {
	const char *name, *help;
	int secs;
} FAMILIES[F_N] = {
	{ "rlock_held", "1 if KEY is held now (also while --min-hold keeps "
	    "it after its run ended), else 0." },
	{ "rlock_running", "1 if KEY is held by a run whose COMMAND is "
	    "running now, else 0 (free, or resting: only --min-hold keeps it "
	    "after its run ended)." },
	{ "rlock_lease_left_seconds", "Time until the holder's lease (or "
	    "--min-hold) ends, the soonest of a semaphore's holders; 0 when "
	    "free, +Inf when the key never expires.", 1 },
	{ "rlock_waiters", "--fair waiters queued for KEY (plain waiters "
	    "are not counted)." },
	{ "rlock_skipped_runs", "Runs of KEY not obtained (-n, or --timeout "
	    "ran out) since the latest grant, the holder's or the last "
	    "run's." },
	{ "rlock_last_run_start_timestamp_seconds", "When the last recorded "
	    "run of KEY acquired it (Unix time).", 1 },
	{ "rlock_last_run_end_timestamp_seconds", "When the last recorded run "
	    "of KEY ended (Unix time).", 1 },
	{ "rlock_last_run_duration_seconds", "How long the last recorded run "
	    "of KEY held it, from the grant to the end of COMMAND.", 1 },
	{ "rlock_last_run_exit_status", "rlock's exit status for the last "
	    "recorded run of KEY (COMMAND's, 128+N, 70 lease lost, 124 "
	    "--max-hold)." },
	{ "rlock_last_run_lease_lost", "1 if the last recorded run of KEY "
	    "lost its lease, else 0." },
	{ "rlock_last_success_timestamp_seconds", "When the last run of KEY "
	    "that exited 0 with its lease ended (Unix time).", 1 },
};

/* A label value: \ " and newline escaped as the format wants; a control
 * byte or one that is not UTF-8 as the text \xHH (its backslash escaped). */
static void
label_value(const char *s, size_t len)
{
	view_put_escaped(s, len, "\\\"\n", "\\\\");
}

/* lease_left's value when a holder's key never expires: +Inf. */
#define NEVER (-2)

/* The soonest lease end among the holders: 0 none, or NEVER. */
static long long
lease_left(const struct view *v)
{
	long long left = -1, l;
	size_t i;

	for (i = 0; i < v->holders->elements; i++) {
		l = v->holders->element[i]->element[
		    INSPECT_HOLDERS_LEASE_LEFT]->integer;
		if (l < 0)
			return NEVER;
		if (left < 0 || l < left)
			left = l;
	}
	return left < 0 ? 0 : left;
}

/* One family's value for v: -1 if v has none (the last-run families of a
 * KEY with no recorded run, a field rlock did not write), or NEVER. */
static long long
value(enum family f, const struct view *v)
{
	struct reply *const *l = v->last->element;
	int run = view_has_run(v);
	long long a = run ? view_num(l[INSPECT_LAST_STARTED]) : -1;
	long long b = run ? view_num(l[INSPECT_LAST_ENDED]) : -1;

	switch (f) {
	case F_HELD:
		return view_held(v);
	case F_RUNNING:
		return view_held(v) && !view_resting(v);
	case F_LEASE_LEFT:
		return lease_left(v);
	case F_WAITERS:
		return v->queued > 0 ? v->queued : 0;
	case F_SKIPS:
		if (view_held(v))
			return view_skips(v, v->holders->element[0]->element[
			    INSPECT_HOLDERS_FENCE]);
		return run ? view_skips(v, l[INSPECT_LAST_FENCE]) : 0;
	case F_START:
		return a;
	case F_END:
		return b;
	case F_DURATION:
		return a < 0 || b < 0 ? -1 : b > a ? b - a : 0;
	case F_EXIT:
		return run ? view_num(l[INSPECT_LAST_EXIT]) : -1;
	case F_LOST:
		return run ? strcmp(l[INSPECT_LAST_LOST]->str, "1") == 0 : -1;
	case F_OK:
		return run ? view_num(l[INSPECT_LAST_OK_ENDED]) : -1;
	default:
		return -1;
	}
}

/* One family's sample for v, if it has one. */
static void
sample(enum family f, const char *master, const struct view *v)
{
	long long x = value(f, v);

	if (x == -1)
		return;
	printf("%s{key=\"", FAMILIES[f].name);
	label_value(v->key, v->keylen);
	if (master) {
		fputs("\",master=\"", stdout);
		label_value(master, strlen(master));
	}
	if (x == NEVER)
		puts("\"} +Inf");
	else if (FAMILIES[f].secs)
		printf("\"} %lld.%03lld\n", x / 1000, x % 1000);
	else
		printf("\"} %lld\n", x);
}

/* A KEY given twice would be a duplicate series, which the format
 * forbids: only its first view counts. */
static int
seen_before(const struct prom_src *s, size_t j)
{
	size_t k;

	for (k = 0; k < j; k++)
		if (s->v[k].keylen == s->v[j].keylen &&
		    memcmp(s->v[k].key, s->v[j].key, s->v[j].keylen) == 0)
			return 1;
	return 0;
}

void
prom_print(const struct prom_src *src, size_t n)
{
	size_t i, j;
	int f;

	for (f = 0; f < F_N; f++) {
		printf("# HELP %s %s\n# TYPE %s gauge\n", FAMILIES[f].name,
		    FAMILIES[f].help, FAMILIES[f].name);
		for (i = 0; i < n; i++)
			for (j = 0; j < src[i].n; j++)
				if (!seen_before(&src[i], j))
					sample((enum family)f, src[i].master,
					    &src[i].v[j]);
	}
}
