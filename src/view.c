// SPDX-License-Identifier: MIT
/*
 * One KEY as status shows it, below the reading and printing of
 * report_view.c and report_prom.c: the checked reply's accessors, and
 * bytes from Redis written out safely (for a terminal, or as a label
 * value). Prints on stdout only.
 */
#include "view.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/*
 * The length of a UTF-8 sequence at u safe on a terminal, or 0: not for
 * ASCII, and not for C1 controls (U+0080-U+009F), which move a terminal
 * as C0 ones do.
 */
static size_t
utf8_shown(const unsigned char *u, size_t n)
{
	uint32_t cp;
	size_t len = utf8_len(u, n, &cp);

	return len > 1 && cp >= 0xa0 ? len : 0;
}

void
view_put_escaped(const char *s, size_t len, const char *quoted,
    const char *hex)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (u[i] != '\0' && strchr(quoted, u[i])) {
			printf("\\%c", u[i] == '\n' ? 'n' : u[i]);
			i++;
		} else if (u[i] >= 0x20 && u[i] < 0x7f) {
			putchar(u[i++]);
		} else if ((n = utf8_shown(u + i, len - i)) > 0) {
			fwrite(u + i, 1, n, stdout);
			i += n;
		} else {
			printf("%sx%02x", hex, u[i++]);
		}
	}
}

/*
 * Bytes from Redis on stdout for a human: a key or command must not be
 * able to move the cursor, change colours or split a line.
 */
void
view_put_text(const char *s, size_t len)
{
	view_put_escaped(s, len, "\\", "\\");
}

void
view_put_reply(const struct reply *s)
{
	view_put_text(s->str, s->len);
}

long long
view_num(const struct reply *s)
{
	long long v;

	return s->len > 0 && int_parse(s->str, 0, INT64_MAX, &v) == 0 ? v : -1;
}

int
view_resting(const struct view *v)
{
	size_t i;

	if (!view_held(v))
		return 0;
	for (i = 0; i < v->holders->elements; i++)
		if (v->holders->element[i]->element[
		    INSPECT_HOLDERS_ENDED]->len == 0)
			return 0;
	return 1;
}

int
view_has_run(const struct view *v)
{
	return v->last->elements == INSPECT_LAST_N &&
	    v->last->element[INSPECT_LAST_ENDED]->len > 0;
}

long long
view_skips(const struct view *v, const struct reply *f)
{
	const struct reply *sf;
	long long n;

	if (v->last->elements != INSPECT_LAST_N)
		return 0;
	sf = v->last->element[INSPECT_LAST_SKIP_FENCE];
	if (sf->len == 0 || sf->len != f->len ||
	    memcmp(sf->str, f->str, f->len) != 0 ||
	    (n = view_num(v->last->element[INSPECT_LAST_SKIPS])) < 0)
		return 0;
	return n;
}

/* Does r have n elements, strings from index `from` on? */
int
view_strings(const struct reply *r, size_t n, size_t from)
{
	size_t i;

	if (r->type != REPLY_ARRAY || r->elements != n)
		return 0;
	for (i = from; i < n; i++)
		if (r->element[i]->type != REPLY_STRING)
			return 0;
	return 1;
}

int
view_held(const struct view *v)
{
	return v->mode[0] != 'f';
}

/* "user@host, pid N" (and ": cmd") from four strings in that order. */
void
view_put_who(struct reply **e, int with_cmd)
{
	if (e[0]->len == 0 && e[1]->len == 0 && e[2]->len == 0) {
		fputs("unknown (not written by rlock)", stdout);
		return;
	}
	view_put_reply(e[0]);
	putchar('@');
	view_put_reply(e[1]);
	if (e[2]->len > 0) {
		fputs(", pid ", stdout);
		view_put_reply(e[2]);
	}
	if (with_cmd && e[3]->len > 0) {
		fputs(": ", stdout);
		view_put_reply(e[3]);
	}
}
