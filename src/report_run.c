// SPDX-License-Identifier: MIT
/*
 * The last run and the skipped runs of a KEY, as status shows them; see
 * report_run.h, and report.c for the JSON schema. Every field was checked
 * to be a string by report_view_parse; numbers are read with view_num, so a
 * field rlock did not write shows as null (JSON) or not at all (text).
 */
#include "report_run.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

static void
put_reply(const struct reply *s)
{
	view_put_text(s->str, s->len);
}

static long long
field_num(const struct reply *s)
{
	long long v;

	return view_num(s, &v) ? v : -1;
}

void
report_run_json_holder(const struct view *v, const struct reply *h)
{
	fputs(",\"finished\":", stdout);
	if (h->element[INSPECT_HOLDERS_ENDED]->len == 0) {
		fputs("null", stdout);
	} else {
		fputs("{\"ended_ms\":", stdout);
		view_json_num(h->element[INSPECT_HOLDERS_ENDED]);
		fputs(",\"exit_status\":", stdout);
		view_json_num(h->element[INSPECT_HOLDERS_EXIT]);
		fputs(",\"hold_until_ms\":", stdout);
		view_json_num(h->element[INSPECT_HOLDERS_HOLD_UNTIL]);
		putchar('}');
	}
	printf(",\"skips\":%lld",
	    view_skips(v, h->element[INSPECT_HOLDERS_FENCE]));
}

static void
json_last_skip(const struct view *v)
{
	struct reply *const *l = v->last->element;

	fputs(",\"last_skip\":", stdout);
	if (l[INSPECT_LAST_SKIP_AT]->len == 0) {
		fputs("null", stdout);
		return;
	}
	fputs("{\"user\":", stdout);
	view_json_str(l[INSPECT_LAST_SKIP_USER]);
	fputs(",\"host\":", stdout);
	view_json_str(l[INSPECT_LAST_SKIP_HOST]);
	fputs(",\"pid\":", stdout);
	view_json_num(l[INSPECT_LAST_SKIP_PID]);
	fputs(",\"at_ms\":", stdout);
	view_json_num(l[INSPECT_LAST_SKIP_AT]);
	putchar('}');
}

void
report_run_json_last(const struct view *v)
{
	struct reply *const *l;
	long long start, end;

	fputs(",\"last_run\":", stdout);
	if (!view_has_run(v)) {
		fputs("null", stdout);
		return;
	}
	l = v->last->element;
	putchar('{');
	view_json_who((struct reply **)l + INSPECT_LAST_USER);
	fputs(",\"started_ms\":", stdout);
	view_json_num(l[INSPECT_LAST_STARTED]);
	fputs(",\"ended_ms\":", stdout);
	view_json_num(l[INSPECT_LAST_ENDED]);
	start = field_num(l[INSPECT_LAST_STARTED]);
	end = field_num(l[INSPECT_LAST_ENDED]);
	if (start >= 0 && end >= 0)
		printf(",\"duration_ms\":%lld", end > start ? end - start : 0);
	else
		fputs(",\"duration_ms\":null", stdout);
	fputs(",\"exit_status\":", stdout);
	view_json_num(l[INSPECT_LAST_EXIT]);
	fputs(",\"fence\":", stdout);
	view_json_num(l[INSPECT_LAST_FENCE]);
	printf(",\"lease_lost\":%s",
	    strcmp(l[INSPECT_LAST_LOST]->str, "1") == 0 ?
	    "true" : "false");
	fputs(",\"last_success_ms\":", stdout);
	view_json_num(l[INSPECT_LAST_OK_ENDED]);
	printf(",\"skips\":%lld", view_skips(v, l[INSPECT_LAST_FENCE]));
	json_last_skip(v);
	putchar('}');
}

/* "2026-11-21 02:00:01 UTC (3h05m ago)", or "(in 40s)" for the future. */
static void
when_rel(long long ms, long long now)
{
	char when[64], d[32];

	view_when(ms, when, sizeof(when));
	dur_format(now > ms ? now - ms : ms - now, d, sizeof(d));
	printf("%s (%s%s%s)", when, now >= ms ? "" : "in ", d,
	    now >= ms ? " ago" : "");
}

int
report_run_text_holder(const struct view *v, const struct reply *h)
{
	long long ended = field_num(h->element[INSPECT_HOLDERS_ENDED]);
	long long hold = field_num(h->element[INSPECT_HOLDERS_HOLD_UNTIL]);
	long long since = field_num(h->element[INSPECT_HOLDERS_SINCE]);
	char took[32];

	if (ended < 0)
		return 0;
	view_label("run ended");
	when_rel(ended, v->now);
	if (h->element[INSPECT_HOLDERS_EXIT]->len > 0) {
		fputs(", exit ", stdout);
		put_reply(h->element[INSPECT_HOLDERS_EXIT]);
	}
	if (since >= 0 && ended >= since) {
		dur_format(ended - since, took, sizeof(took));
		printf(", after %s", took);
	}
	putchar('\n');
	if (hold >= 0) {
		view_label("held until");
		when_rel(hold, v->now);
		fputs(" by --min-hold\n", stdout);
	}
	return 1;
}

void
report_run_text_skips(const struct view *v, const struct reply *f)
{
	long long n = view_skips(v, f), at;
	struct reply *const *l;
	char when[64];

	if (n <= 0)
		return;
	l = v->last->element;
	view_label("skipped");
	printf("%lld run%s, the last by ", n, n == 1 ? "" : "s");
	put_reply(l[INSPECT_LAST_SKIP_USER]);
	putchar('@');
	put_reply(l[INSPECT_LAST_SKIP_HOST]);
	if (l[INSPECT_LAST_SKIP_PID]->len > 0) {
		fputs(", pid ", stdout);
		put_reply(l[INSPECT_LAST_SKIP_PID]);
	}
	if ((at = field_num(l[INSPECT_LAST_SKIP_AT])) >= 0) {
		view_when(at, when, sizeof(when));
		printf(", at %s", when);
	}
	putchar('\n');
}

void
report_run_text_holder_skips(const struct view *v, const struct reply *h)
{
	const struct reply *f = h->element[INSPECT_HOLDERS_FENCE], *lf;

	if (view_has_run(v)) {
		lf = v->last->element[INSPECT_LAST_FENCE];
		if (lf->len == f->len && memcmp(lf->str, f->str, f->len) == 0)
			return;
	}
	report_run_text_skips(v, f);
}

void
report_run_text_last(const struct view *v)
{
	struct reply *const *l;
	long long start, end, ok;
	char took[32];

	if (!view_has_run(v))
		return;
	l = v->last->element;
	view_label("last run");
	view_put_who((struct reply **)l + INSPECT_LAST_USER, 1);
	putchar('\n');
	start = field_num(l[INSPECT_LAST_STARTED]);
	end = field_num(l[INSPECT_LAST_ENDED]);
	if (start >= 0) {
		view_label("started");
		when_rel(start, v->now);
		putchar('\n');
	}
	view_label("ended");
	when_rel(end, v->now);
	if (start >= 0 && end >= start) {
		dur_format(end - start, took, sizeof(took));
		printf(", after %s", took);
	}
	putchar('\n');
	view_label("exit");
	put_reply(l[INSPECT_LAST_EXIT]);
	if (strcmp(l[INSPECT_LAST_LOST]->str, "1") == 0)
		fputs(" (the lease was lost)", stdout);
	putchar('\n');
	if (l[INSPECT_LAST_FENCE]->len > 0) {
		view_label("fence");
		put_reply(l[INSPECT_LAST_FENCE]);
		putchar('\n');
	}
	report_run_text_skips(v, l[INSPECT_LAST_FENCE]);
	/* The alert question: when did KEY last run to success? */
	ok = field_num(l[INSPECT_LAST_OK_ENDED]);
	if (ok != end) {
		view_label("last ok");
		if (ok >= 0)
			when_rel(ok, v->now);
		else
			fputs("none recorded", stdout);
		putchar('\n');
	}
}
