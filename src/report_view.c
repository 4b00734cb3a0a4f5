// SPDX-License-Identifier: MIT
/*
 * Reading one KEY with inspect.lua and showing it, text or JSON; see
 * report_view.h, and report.c for the JSON schema. Every reply is checked
 * whole (report_view_parse) before anything looks inside it.
 */
#include "report_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_scripts.h"
#include "mode.h"
#include "report_run.h"
#include "util.h"

static void
put_reply(const struct reply *s)
{
	view_put_text(s->str, s->len);
}

static int
num(const struct reply *s, long long *v)
{
	return view_num(s, v);
}

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
	if (strcmp(m->str, "mutex") == 0)
		v->mode = "mutex";
	else if (strcmp(m->str, "semaphore") == 0)
		v->mode = "semaphore";
	else if (strcmp(m->str, "shared") == 0)
		v->mode = "shared";
	else if (strcmp(m->str, "redisson") == 0)
		v->mode = "redisson";
	else if (strcmp(m->str, "free") == 0)
		v->mode = "free";
	else
		return -1;
	if (v->mode[0] != 'f' && h->elements == 0)
		return -1;
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

static void
json_holder(const struct view *v, const struct reply *h, long long now)
{
	long long since, left = h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer;

	putchar('{');
	view_json_who(h->element + INSPECT_HOLDERS_USER);
	fputs(",\"since_ms\":", stdout);
	view_json_num(h->element[INSPECT_HOLDERS_SINCE]);
	fputs(",\"held_ms\":", stdout);
	if (num(h->element[INSPECT_HOLDERS_SINCE], &since))
		printf("%lld", now > since ? now - since : 0);
	else
		fputs("null", stdout);
	fputs(",\"lease_ms\":", stdout);
	view_json_num(h->element[INSPECT_HOLDERS_LEASE]);
	if (left >= 0)
		printf(",\"lease_left_ms\":%lld", left);
	else
		fputs(",\"lease_left_ms\":null", stdout);
	fputs(",\"fence\":", stdout);
	view_json_num(h->element[INSPECT_HOLDERS_FENCE]);
	if (h->element[INSPECT_HOLDERS_OWNER]->len > 0) {
		fputs(",\"redisson_owner\":", stdout);
		view_json_str(h->element[INSPECT_HOLDERS_OWNER]);
		fputs(",\"reentries\":", stdout);
		view_json_num(h->element[INSPECT_HOLDERS_COUNT]);
	}
	report_run_json_holder(v, h);
	putchar('}');
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
	if (view_held(v) && v->limit > 0)
		printf(",\"limit\":%lld", v->limit);
	else
		fputs(",\"limit\":null", stdout);
	printf(",\"server_time_ms\":%lld,\"holders\":[", v->now);
	for (i = 0; i < v->holders->elements; i++) {
		if (i > 0)
			putchar(',');
		json_holder(v, v->holders->element[i], v->now);
	}
	printf("],\"queue\":{\"length\":%lld,\"waiters\":[", v->queued);
	for (i = 0; i < v->waiters->elements; i++) {
		fputs(i > 0 ? ",{" : "{", stdout);
		view_json_who(v->waiters->element[i]->element);
		putchar('}');
	}
	fputs("]}", stdout);
	if (strcmp(v->mode, "shared") == 0)
		printf(",\"writers_waiting\":%lld", v->writers);
	report_run_json_last(v);
	putchar('}');
}

/* An array of views, one per line: easy for jq and for grep alike. */
void
report_view_print_json(const struct view *v, size_t n)
{
	size_t i;

	if (n == 0) {
		fputs("[]\n", stdout);
		return;
	}
	for (i = 0; i < n; i++) {
		fputs(i == 0 ? "[\n" : ",\n", stdout);
		json_view(&v[i]);
	}
	fputs("\n]\n", stdout);
}

static void
text_since(long long since, long long now)
{
	char when[64], ago[32];

	view_when(since, when, sizeof(when));
	/* A hostile or skewed reply must not overflow the subtraction. */
	dur_format(now > since ? now - since : 0, ago, sizeof(ago));
	view_label("since");
	printf("%s (%s ago)\n", when, ago);
}

static void
text_holder(const struct view *v, const struct reply *h, long long now)
{
	long long n, left = h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer;
	char buf[32];

	view_label("holder");
	if (h->element[INSPECT_HOLDERS_USER]->len == 0 &&
	    h->element[INSPECT_HOLDERS_OWNER]->len > 0)
		fputs("a Redisson client", stdout);
	else
		view_put_who(h->element + INSPECT_HOLDERS_USER, 0);
	putchar('\n');
	if (h->element[INSPECT_HOLDERS_OWNER]->len > 0) {
		view_label("owner");
		put_reply(h->element[INSPECT_HOLDERS_OWNER]);
		fputs(" (Redisson's ID:THREAD), held ", stdout);
		put_reply(h->element[INSPECT_HOLDERS_COUNT]);
		fputs(" time(s)\n", stdout);
	}
	if (h->element[INSPECT_HOLDERS_CMD]->len > 0) {
		view_label("command");
		put_reply(h->element[INSPECT_HOLDERS_CMD]);
		putchar('\n');
	}
	if (num(h->element[INSPECT_HOLDERS_SINCE], &n))
		text_since(n, now);
	if (report_run_text_holder(v, h))
		goto fence;
	view_label("lease left");
	if (left < 0) {
		fputs("never expires", stdout);
	} else {
		dur_format(left, buf, sizeof(buf));
		fputs(buf, stdout);
	}
	if (num(h->element[INSPECT_HOLDERS_LEASE], &n)) {
		dur_format(n, buf, sizeof(buf));
		printf(" of %s", buf);
	}
	putchar('\n');
fence:
	if (num(h->element[INSPECT_HOLDERS_FENCE], &n)) {
		view_label("fence");
		printf("%lld\n", n);
	}
	report_run_text_holder_skips(v, h);
}

static void
text_queue(const struct view *v)
{
	size_t i;

	view_label("waiting");
	printf("%lld (--fair)\n", v->queued);
	for (i = 0; i < v->waiters->elements; i++) {
		view_label(i == 0 ? "next" : "then");
		view_put_who(v->waiters->element[i]->element, 1);
		putchar('\n');
	}
}

/* ", resting: ..." after the state of a KEY whose runs all ended. */
static void
text_resting(const struct view *v)
{
	char when[64];
	long long until = view_hold_until(v);

	if (!view_resting(v))
		return;
	fputs(", resting: the run ended", stdout);
	if (until >= 0) {
		view_when(until, when, sizeof(when));
		printf("; --min-hold holds it until %s", when);
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
		text_holder(v, v->holders->element[i], v->now);
	if (v->writers > 0) {
		view_label("writers");
		printf("%lld waiting; no new reader gets in\n", v->writers);
	}
	if (v->queued > 0)
		text_queue(v);
	report_run_text_last(v);
}

void
report_view_free_all(struct view *v, size_t n, int own_keys)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].r)
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
	if (h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer >= 0)
		dur_format(h->element[INSPECT_HOLDERS_LEASE_LEFT]->integer,
		    left, sizeof(left));
	else
		snprintf(left, sizeof(left), "never expires");
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
	put_reply(h->element[INSPECT_HOLDERS_CMD]);
	putchar('\n');
}
