// SPDX-License-Identifier: MIT
/*
 * Reading one KEY with inspect.lua and showing it, text or JSON: its
 * holders, its --fair queue, and what status shows about runs rather than
 * holders (the last finished run and the runs skipped since, from
 * P{KEY}:last; a holder whose run ended while --min-hold keeps KEY). See
 * report_view.h, and report.c for the JSON schema. Every reply is checked
 * whole (report_view_parse) before anything looks inside it; numbers are
 * read with view_num, so a field rlock did not write shows as null (JSON)
 * or not at all (text).
 */
#include "report_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua_scripts.h"
#include "mode.h"
#include "util.h"

/* The modes inspect.lua names; "free" last. */
static const char *const MODES[] = {
	"mutex", "semaphore", "shared", "redisson", "free"
};
#define MODES_N (sizeof(MODES) / sizeof(MODES[0]))
#define MODE_FREE (MODES_N - 1)

/* Check the whole shape of inspect.lua's reply, then fill v from it. */
int
report_view_parse(struct view *v, const struct reply *r)
{
	const struct reply *h, *w, *m, *l;
	size_t i;

	if (r->type != REPLY_ARRAY || r->elements != INSPECT_R_N ||
	    r->element[INSPECT_R_NOW]->type != REPLY_INTEGER ||
	    r->element[INSPECT_R_MODE]->type != REPLY_STRING ||
	    r->element[INSPECT_R_LIMIT]->type != REPLY_INTEGER ||
	    r->element[INSPECT_R_HOLDERS]->type != REPLY_ARRAY ||
	    r->element[INSPECT_R_QUEUED]->type != REPLY_INTEGER ||
	    r->element[INSPECT_R_WAITERS]->type != REPLY_ARRAY ||
	    r->element[INSPECT_R_LAST]->type != REPLY_ARRAY ||
	    r->element[INSPECT_R_WRITERS]->type != REPLY_INTEGER)
		return -1;
	m = r->element[INSPECT_R_MODE];
	h = r->element[INSPECT_R_HOLDERS];
	w = r->element[INSPECT_R_WAITERS];
	l = r->element[INSPECT_R_LAST];
	if (l->elements != 0 && !view_strings(l, INSPECT_LAST_N, 0))
		return -1;
	for (i = 0; i < h->elements; i++)
		if (!view_strings(h->element[i], INSPECT_HOLDERS_N, 1) ||
		    h->element[i]->element[INSPECT_HOLDERS_LEASE_LEFT]->type !=
		    REPLY_INTEGER)
			return -1;
	for (i = 0; i < w->elements; i++)
		if (!view_strings(w->element[i], INSPECT_WAITERS_N, 0))
			return -1;
	for (i = 0; i < MODES_N && strcmp(m->str, MODES[i]) != 0; i++)
		;
	if (i == MODES_N || (i != MODE_FREE && h->elements == 0))
		return -1;
	v->mode = MODES[i];
	v->now = r->element[INSPECT_R_NOW]->integer;
	v->limit = r->element[INSPECT_R_LIMIT]->integer;
	v->holders = h;
	v->queued = r->element[INSPECT_R_QUEUED]->integer;
	v->waiters = w;
	v->last = l;
	v->writers = r->element[INSPECT_R_WRITERS]->integer;
	return 0;
}

/* Read everything about v->key in one script call; -1: failure in node. */
int
report_view_inspect(struct lock_node *node, const struct lock_mode *mode,
    const char *prefix, struct view *v)
{
	struct lock_keys k;
	struct mode_call c;
	struct reply *r;
	char what[80];
	int i;

	mode->keys(&k, prefix, v->key, v->keylen, NULL);
	mode->inspect(&c, &k);
	r = lock_node_script_ro(node, &c.a);
	lock_keys_free(&k);
	if (r == NULL)
		return -1;
	if (r->type == REPLY_ERROR || report_view_parse(v, r) < 0) {
		i = snprintf(what, sizeof(what), "reading '");
		printable(v->key, v->keylen, what + i, sizeof(what) - i - 1);
		strcat(what, "'");
		lock_node_fail_reply(node, what, r);
		reply_free(r);
		return -1;
	}
	v->r = r;
	return 0;
}

/* The text pre (a member's name), then the JSON of a string rlock wrote
 * (null when empty), of a decimal field (null when absent) or of a number
 * (null when negative). */
static void
json_str(const char *pre, const struct reply *s)
{
	fputs(pre, stdout);
	if (s->len == 0)
		fputs("null", stdout);
	else
		json_string(stdout, s->str, s->len);
}

static void
json_ll(const char *pre, long long v)
{
	if (v >= 0)
		printf("%s%lld", pre, v);
	else
		printf("%snull", pre);
}

static void
json_num(const char *pre, const struct reply *s)
{
	json_ll(pre, view_num(s));
}

/* "user", "host", "pid", "command" from four strings in that order. */
static void
json_who(struct reply **e)
{
	json_str("\"user\":", e[0]);
	json_str(",\"host\":", e[1]);
	json_num(",\"pid\":", e[2]);
	json_str(",\"command\":", e[3]);
}

static void
json_holder(const struct view *v, const struct reply *h)
{
	long long since = view_num(h->element[INSPECT_HOLDERS_SINCE]);

	putchar('{');
	json_who(h->element + INSPECT_HOLDERS_USER);
	json_num(",\"since_ms\":", h->element[INSPECT_HOLDERS_SINCE]);
	json_ll(",\"held_ms\":", since < 0 ? -1 :
	    v->now > since ? v->now - since : 0);
	json_num(",\"lease_ms\":", h->element[INSPECT_HOLDERS_LEASE]);
	json_ll(",\"lease_left_ms\":",
	    h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer);
	json_num(",\"fence\":", h->element[INSPECT_HOLDERS_FENCE]);
	if (h->element[INSPECT_HOLDERS_OWNER]->len > 0) {
		json_str(",\"redisson_owner\":",
		    h->element[INSPECT_HOLDERS_OWNER]);
		json_num(",\"reentries\":",
		    h->element[INSPECT_HOLDERS_COUNT]);
	}
	if (h->element[INSPECT_HOLDERS_ENDED]->len == 0) {
		fputs(",\"finished\":null", stdout);
	} else {
		json_num(",\"finished\":{\"ended_ms\":",
		    h->element[INSPECT_HOLDERS_ENDED]);
		json_num(",\"exit_status\":",
		    h->element[INSPECT_HOLDERS_EXIT]);
		json_num(",\"hold_until_ms\":",
		    h->element[INSPECT_HOLDERS_HOLD_UNTIL]);
		putchar('}');
	}
	printf(",\"skips\":%lld}",
	    view_skips(v, h->element[INSPECT_HOLDERS_FENCE]));
}

/* ,"last_run": null or the object (schema: report.c). */
static void
json_last(const struct view *v)
{
	struct reply *const *l = v->last->element;
	long long start, end;

	if (!view_has_run(v)) {
		fputs(",\"last_run\":null", stdout);
		return;
	}
	fputs(",\"last_run\":{", stdout);
	json_who((struct reply **)l + INSPECT_LAST_USER);
	json_num(",\"started_ms\":", l[INSPECT_LAST_STARTED]);
	json_num(",\"ended_ms\":", l[INSPECT_LAST_ENDED]);
	start = view_num(l[INSPECT_LAST_STARTED]);
	end = view_num(l[INSPECT_LAST_ENDED]);
	json_ll(",\"duration_ms\":", start < 0 || end < 0 ? -1 :
	    end > start ? end - start : 0);
	json_num(",\"exit_status\":", l[INSPECT_LAST_EXIT]);
	json_num(",\"fence\":", l[INSPECT_LAST_FENCE]);
	printf(",\"lease_lost\":%s",
	    strcmp(l[INSPECT_LAST_LOST]->str, "1") == 0 ? "true" : "false");
	json_num(",\"last_success_ms\":", l[INSPECT_LAST_OK_ENDED]);
	printf(",\"skips\":%lld", view_skips(v, l[INSPECT_LAST_FENCE]));
	if (l[INSPECT_LAST_SKIP_AT]->len == 0) {
		fputs(",\"last_skip\":null}", stdout);
		return;
	}
	json_str(",\"last_skip\":{\"user\":", l[INSPECT_LAST_SKIP_USER]);
	json_str(",\"host\":", l[INSPECT_LAST_SKIP_HOST]);
	json_num(",\"pid\":", l[INSPECT_LAST_SKIP_PID]);
	json_num(",\"at_ms\":", l[INSPECT_LAST_SKIP_AT]);
	fputs("}}", stdout);
}

static void
json_view(const struct view *v)
{
	size_t i;

	fputs("{\"key\":", stdout);
	json_string(stdout, v->key, v->keylen);
	if (view_held(v))
		printf(",\"held\":true,\"mode\":\"%s\"", v->mode);
	else
		fputs(",\"held\":false,\"mode\":null", stdout);
	printf(",\"resting\":%s", view_resting(v) ? "true" : "false");
	json_ll(",\"limit\":", view_held(v) && v->limit > 0 ?
	    v->limit : -1);
	printf(",\"server_time_ms\":%lld,\"holders\":[", v->now);
	for (i = 0; i < v->holders->elements; i++) {
		if (i > 0)
			putchar(',');
		json_holder(v, v->holders->element[i]);
	}
	printf("],\"queue\":{\"length\":%lld,\"waiters\":[", v->queued);
	for (i = 0; i < v->waiters->elements; i++) {
		fputs(i > 0 ? ",{" : "{", stdout);
		json_who(v->waiters->element[i]->element);
		putchar('}');
	}
	fputs("]}", stdout);
	if (strcmp(v->mode, "shared") == 0)
		printf(",\"writers_waiting\":%lld", v->writers);
	json_last(v);
	putchar('}');
}

/* An array of views, one per line: easy for jq and for grep alike. */
void
report_view_print_json(const struct view *v, size_t n)
{
	size_t i;

	putchar('[');
	for (i = 0; i < n; i++) {
		fputs(i == 0 ? "\n" : ",\n", stdout);
		json_view(&v[i]);
	}
	fputs(n > 0 ? "\n]\n" : "]\n", stdout);
}

/* The label column of status's text. */
static void
label(const char *l)
{
	printf("  %-12s", l);
}

/* Server ms since the epoch as local "YYYY-MM-DD HH:MM:SS ZONE". */
static void
local_time(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
		snprintf(buf, len, "%lld ms after the epoch", ms);
}

/* "2026-11-21 02:00:01 UTC (3h05m ago)", or "(in 40s)" for the future. */
static void
when_rel(long long ms, long long now)
{
	char when[64], d[32];

	/* A hostile reply's times (ms is never negative: view_num) must not
	 * overflow the subtraction. */
	if (now < 0)
		now = 0;
	local_time(ms, when, sizeof(when));
	dur_format(now > ms ? now - ms : ms - now, d, sizeof(d));
	printf("%s (%s%s%s)", when, now >= ms ? "" : "in ", d,
	    now >= ms ? " ago" : "");
}

/* ", after 1m02s": how long a run took, when both ends are known. */
static void
after(long long from, long long to)
{
	char took[32];

	if (from < 0 || to < from)
		return;
	dur_format(to - from, took, sizeof(took));
	printf(", after %s", took);
}

/* The lease left: "never expires" for a key without an expiry. */
static void
lease_text(long long left, char *buf, size_t len)
{
	if (left < 0)
		snprintf(buf, len, "never expires");
	else
		dur_format(left, buf, len);
}

/*
 * A holder's lines for a run that ended while --min-hold keeps KEY ("run
 * ended", "held until"); 1 if it printed them (the lease line would then
 * only repeat the hold), else 0.
 */
static int
text_ended(const struct view *v, const struct reply *h)
{
	long long ended = view_num(h->element[INSPECT_HOLDERS_ENDED]);
	long long hold = view_num(h->element[INSPECT_HOLDERS_HOLD_UNTIL]);

	if (ended < 0)
		return 0;
	label("run ended");
	when_rel(ended, v->now);
	if (h->element[INSPECT_HOLDERS_EXIT]->len > 0) {
		fputs(", exit ", stdout);
		view_put_reply(h->element[INSPECT_HOLDERS_EXIT]);
	}
	after(view_num(h->element[INSPECT_HOLDERS_SINCE]), ended);
	putchar('\n');
	if (hold >= 0) {
		label("held until");
		when_rel(hold, v->now);
		fputs(" by --min-hold\n", stdout);
	}
	return 1;
}

/* "skipped N runs, the last by ..." for the grant whose fence is f. */
static void
text_skips(const struct view *v, const struct reply *f)
{
	long long n = view_skips(v, f), at;
	struct reply *const *l = v->last->element;
	char when[64];

	if (n <= 0)
		return;
	label("skipped");
	printf("%lld run%s, the last by ", n, n == 1 ? "" : "s");
	view_put_who((struct reply **)l + INSPECT_LAST_SKIP_USER, 0);
	if ((at = view_num(l[INSPECT_LAST_SKIP_AT])) >= 0) {
		local_time(at, when, sizeof(when));
		printf(", at %s", when);
	}
	putchar('\n');
}

static void
text_holder(const struct view *v, const struct reply *h)
{
	const struct reply *f = h->element[INSPECT_HOLDERS_FENCE], *lf;
	long long n;
	char buf[32];

	label("holder");
	if (h->element[INSPECT_HOLDERS_USER]->len == 0 &&
	    h->element[INSPECT_HOLDERS_OWNER]->len > 0)
		fputs("a Redisson client", stdout);
	else
		view_put_who(h->element + INSPECT_HOLDERS_USER, 0);
	putchar('\n');
	if (h->element[INSPECT_HOLDERS_OWNER]->len > 0) {
		label("owner");
		view_put_reply(h->element[INSPECT_HOLDERS_OWNER]);
		fputs(" (Redisson's ID:THREAD), held ", stdout);
		view_put_reply(h->element[INSPECT_HOLDERS_COUNT]);
		fputs(" time(s)\n", stdout);
	}
	if (h->element[INSPECT_HOLDERS_CMD]->len > 0) {
		label("command");
		view_put_reply(h->element[INSPECT_HOLDERS_CMD]);
		putchar('\n');
	}
	if ((n = view_num(h->element[INSPECT_HOLDERS_SINCE])) >= 0) {
		label("since");
		when_rel(n, v->now);
		putchar('\n');
	}
	if (!text_ended(v, h)) {
		label("lease left");
		lease_text(h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer,
		    buf, sizeof(buf));
		fputs(buf, stdout);
		if ((n = view_num(h->element[INSPECT_HOLDERS_LEASE])) >= 0) {
			dur_format(n, buf, sizeof(buf));
			printf(" of %s", buf);
		}
		putchar('\n');
	}
	if ((n = view_num(f)) >= 0) {
		label("fence");
		printf("%lld\n", n);
	}
	/* The skips of the last run's grant are shown with the last run. */
	lf = view_has_run(v) ? v->last->element[INSPECT_LAST_FENCE] : NULL;
	if (lf == NULL || lf->len != f->len ||
	    memcmp(lf->str, f->str, f->len) != 0)
		text_skips(v, f);
}

static void
text_queue(const struct view *v)
{
	size_t i;

	label("waiting");
	printf("%lld (--fair)\n", v->queued);
	for (i = 0; i < v->waiters->elements; i++) {
		label(i == 0 ? "next" : "then");
		view_put_who(v->waiters->element[i]->element, 1);
		putchar('\n');
	}
}

/* ", resting: ..." after the state of a KEY whose runs all ended. */
static void
text_resting(const struct view *v)
{
	long long t, until = -1;
	char when[64];
	size_t i;

	if (!view_resting(v))
		return;
	/* When the last of its ended runs stops holding KEY. */
	for (i = 0; i < v->holders->elements; i++)
		if ((t = view_num(v->holders->element[i]->element[
		    INSPECT_HOLDERS_HOLD_UNTIL])) > until)
			until = t;
	fputs(", resting: the run ended", stdout);
	if (until >= 0) {
		local_time(until, when, sizeof(when));
		printf("; --min-hold holds it until %s", when);
	}
}

/* The "last run" block of a KEY, if one is recorded. */
static void
text_last(const struct view *v)
{
	struct reply *const *l = v->last->element;
	long long start, end, ok;

	if (!view_has_run(v))
		return;
	label("last run");
	view_put_who((struct reply **)l + INSPECT_LAST_USER, 1);
	putchar('\n');
	start = view_num(l[INSPECT_LAST_STARTED]);
	end = view_num(l[INSPECT_LAST_ENDED]);
	if (start >= 0) {
		label("started");
		when_rel(start, v->now);
		putchar('\n');
	}
	label("ended");
	when_rel(end, v->now);
	after(start, end);
	putchar('\n');
	label("exit");
	view_put_reply(l[INSPECT_LAST_EXIT]);
	if (strcmp(l[INSPECT_LAST_LOST]->str, "1") == 0)
		fputs(" (the lease was lost)", stdout);
	putchar('\n');
	if (l[INSPECT_LAST_FENCE]->len > 0) {
		label("fence");
		view_put_reply(l[INSPECT_LAST_FENCE]);
		putchar('\n');
	}
	text_skips(v, l[INSPECT_LAST_FENCE]);
	/* The alert question: when did KEY last run to success? */
	ok = view_num(l[INSPECT_LAST_OK_ENDED]);
	if (ok != end) {
		label("last ok");
		if (ok >= 0)
			when_rel(ok, v->now);
		else
			fputs("none recorded", stdout);
		putchar('\n');
	}
}

void
report_view_print_text(const struct view *v)
{
	size_t i;

	view_put_text(v->key, v->keylen);
	if (!view_held(v))
		fputs(": free", stdout);
	else if (v->mode[0] == 'm')
		fputs(": held (mutex)", stdout);
	else if (v->mode[0] == 'r')
		fputs(": held (Redisson lock)", stdout);
	else if (strcmp(v->mode, "shared") == 0)
		printf(": held (shared, %zu holder%s)", v->holders->elements,
		    v->holders->elements == 1 ? "" : "s");
	else if (v->limit > 0)
		printf(": held (semaphore, %zu of %lld slots taken)",
		    v->holders->elements, v->limit);
	else
		printf(": held (semaphore, %zu holders)",
		    v->holders->elements);
	text_resting(v);
	putchar('\n');
	for (i = 0; i < v->holders->elements; i++)
		text_holder(v, v->holders->element[i]);
	if (v->writers > 0) {
		label("writers");
		printf("%lld waiting; no new reader gets in\n", v->writers);
	}
	if (v->queued > 0)
		text_queue(v);
	text_last(v);
}

void
report_view_free_all(struct view *v, size_t n, int own_keys)
{
	size_t i;

	for (i = 0; i < n; i++) {
		reply_free(v[i].r);
		if (own_keys)
			free(v[i].key);
	}
	free(v);
}

void
report_view_print_line(const struct view *v)
{
	const struct reply *h = v->holders->element[0];
	char left[32];

	view_put_text(v->key, v->keylen);
	putchar('\t');
	view_put_who(h->element + INSPECT_HOLDERS_USER, 0);
	if (v->holders->elements > 1)
		printf(" +%zu", v->holders->elements - 1);
	lease_text(h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer, left,
	    sizeof(left));
	printf("\t%s\t", left);
	if (v->mode[0] == 'm')
		fputs("mutex", stdout);
	else if (strcmp(v->mode, "shared") == 0)
		printf("shared %zu", v->holders->elements);
	else if (v->limit > 0)
		printf("sem %zu/%lld", v->holders->elements, v->limit);
	else
		printf("sem %zu", v->holders->elements);
	putchar('\t');
	view_put_reply(h->element[INSPECT_HOLDERS_CMD]);
	putchar('\n');
}
