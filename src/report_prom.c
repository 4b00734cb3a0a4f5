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

static const struct {
	const char *name, *help;
} FAMILIES[F_N] = {
	{ "rlock_held", "1 if KEY is held now (also while --min-hold keeps "
	    "it after its run ended), else 0." },
	{ "rlock_running", "1 if KEY is held by a run whose COMMAND is "
	    "running now, else 0 (free, or resting: only --min-hold keeps it "
	    "after its run ended)." },
	{ "rlock_lease_left_seconds", "Time until the holder's lease (or "
	    "--min-hold) ends, the soonest of a semaphore's holders; 0 when "
	    "free, +Inf when the key never expires." },
	{ "rlock_waiters", "--fair waiters queued for KEY (plain waiters "
	    "are not counted)." },
	{ "rlock_skipped_runs", "Runs of KEY not obtained (-n, or --timeout "
	    "ran out) since the latest grant, the holder's or the last "
	    "run's." },
	{ "rlock_last_run_start_timestamp_seconds", "When the last recorded "
	    "run of KEY acquired it (Unix time)." },
	{ "rlock_last_run_end_timestamp_seconds", "When the last recorded run "
	    "of KEY ended (Unix time)." },
	{ "rlock_last_run_duration_seconds", "How long the last recorded run "
	    "of KEY held it, from the grant to the end of COMMAND." },
	{ "rlock_last_run_exit_status", "rlock's exit status for the last "
	    "recorded run of KEY (COMMAND's, 128+N, 70 lease lost, 124 "
	    "--max-hold)." },
	{ "rlock_last_run_lease_lost", "1 if the last recorded run of KEY "
	    "lost its lease, else 0." },
	{ "rlock_last_success_timestamp_seconds", "When the last run of KEY "
	    "that exited 0 with its lease ended (Unix time)." },
};

/* A label value: \ " and newline escaped as the format wants; a control
 * byte or one that is not UTF-8 as the text \xHH (its backslash escaped). */
static void
label_value(const char *s, size_t len)
{
	view_put_escaped(s, len, "\\\"\n", "\\\\");
}

static void
series(enum family f, const char *master, const struct view *v)
{
	printf("%s{key=\"", FAMILIES[f].name);
	label_value(v->key, v->keylen);
	if (master) {
		fputs("\",master=\"", stdout);
		label_value(master, strlen(master));
	}
	fputs("\"} ", stdout);
}

static void
seconds(long long ms)
{
	printf("%lld.%03lld\n", ms / 1000, ms % 1000);
}

static long long
field(const struct view *v, int i)
{
	long long n;

	return view_num(v->last->element[i], &n) ? n : -1;
}

/* The soonest lease end among the holders: -1 none, -2 never. */
static long long
lease_left(const struct view *v)
{
	long long left = -1, l;
	size_t i;

	for (i = 0; i < v->holders->elements; i++) {
		l = v->holders->element[i]->element[
		    INSPECT_HOLDERS_LEASE_LEFT]->integer;
		if (l < 0)
			return -2;
		if (left < 0 || l < left)
			left = l;
	}
	return left;
}

static long long
skips(const struct view *v)
{
	if (view_held(v))
		return view_skips(v, v->holders->element[0]->element[
		    INSPECT_HOLDERS_FENCE]);
	return view_has_run(v) ?
	    view_skips(v, v->last->element[INSPECT_LAST_FENCE]) : 0;
}

/* One family's sample for v; 0 if v has none. */
static int
sample(enum family f, const char *master, const struct view *v)
{
	long long a, b;

	switch (f) {
	case F_HELD:
		series(f, master, v);
		printf("%d\n", view_held(v));
		return 1;
	case F_RUNNING:
		series(f, master, v);
		printf("%d\n", view_held(v) && !view_resting(v));
		return 1;
	case F_LEASE_LEFT:
		series(f, master, v);
		if ((a = lease_left(v)) == -2)
			puts("+Inf");
		else
			seconds(a < 0 ? 0 : a);
		return 1;
	case F_WAITERS:
		series(f, master, v);
		printf("%lld\n", v->queued > 0 ? v->queued : 0);
		return 1;
	case F_SKIPS:
		series(f, master, v);
		printf("%lld\n", skips(v));
		return 1;
	default:
		break;
	}
	if (!view_has_run(v))
		return 0;
	a = field(v, INSPECT_LAST_STARTED);
	b = field(v, INSPECT_LAST_ENDED);
	switch (f) {
	case F_START:
	case F_END:
		if ((f == F_START ? a : b) < 0)
			return 0;
		series(f, master, v);
		seconds(f == F_START ? a : b);
		return 1;
	case F_DURATION:
		if (a < 0 || b < 0)
			return 0;
		series(f, master, v);
		seconds(b > a ? b - a : 0);
		return 1;
	case F_EXIT:
		if ((a = field(v, INSPECT_LAST_EXIT)) < 0)
			return 0;
		series(f, master, v);
		printf("%lld\n", a);
		return 1;
	case F_LOST:
		series(f, master, v);
		printf("%d\n", strcmp(v->last->element[
		    INSPECT_LAST_LOST]->str, "1") == 0);
		return 1;
	case F_OK:
		if ((a = field(v, INSPECT_LAST_OK_ENDED)) < 0)
			return 0;
		series(f, master, v);
		seconds(a);
		return 1;
	default:
		return 0;
	}
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
					(void)sample((enum family)f,
					    src[i].master, &src[i].v[j]);
	}
}
