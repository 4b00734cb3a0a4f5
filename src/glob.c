// SPDX-License-Identifier: MIT
/*
 * Redis's glob, as KEYS and SCAN MATCH read it, over any bytes, and the
 * SCAN MATCH pattern of `rlock list PATTERN`. Pure: no I/O, no Redis; the
 * SCAN loop that uses them is in report.c.
 */
#include "glob.h"

#include <string.h>

#include "util.h"

/*
 * The class at p ("[...]") as Redis's glob reads it: *hit tells whether
 * c is in it; returns the bytes it spans, 0 if it is not closed.
 */
static size_t
glob_class(const char *p, size_t n, unsigned char c, int *hit)
{
	size_t i = 1;
	int neg = 0;

	*hit = 0;
	if (i < n && p[i] == '^')
		neg = 1, i++;
	for (; i < n && p[i] != ']'; i++) {
		if (p[i] == '\\' && i + 1 < n) {
			i++;
			*hit |= (unsigned char)p[i] == c;
		} else if (i + 2 < n && p[i + 1] == '-') {
			unsigned char a = p[i], b = p[i + 2], t;

			if (a > b)
				t = a, a = b, b = t;
			*hit |= c >= a && c <= b;
			i += 2;
		} else {
			*hit |= (unsigned char)p[i] == c;
		}
	}
	if (i >= n)
		return 0;
	if (neg)
		*hit = !*hit;
	return i + 1;
}

int
glob_match(const char *p, size_t pn, const char *s, size_t sn)
{
	size_t span;
	int hit;

	for (; pn > 0; p++, pn--) {
		switch (*p) {
		case '*':
			while (pn > 1 && p[1] == '*')
				p++, pn--;
			for (;; s++, sn--) {
				if (glob_match(p + 1, pn - 1, s, sn))
					return 1;
				if (sn == 0)
					return 0;
			}
		case '?':
			if (sn == 0)
				return 0;
			break;
		case '[':
			if (sn == 0 || (span = glob_class(p, pn,
			    (unsigned char)*s, &hit)) == 0 || !hit)
				return 0;
			p += span - 1, pn -= span - 1;
			break;
		case '\\':
			if (pn >= 2)
				p++, pn--;
			/* FALLTHROUGH */
		default:
			if (sn == 0 || *p != *s)
				return 0;
			break;
		}
		s++, sn--;
	}
	return sn == 0;
}

int
glob_valid(const char *p, size_t n)
{
	size_t i = 0, span;
	int hit;

	while (i < n) {
		if (p[i] == '\\') {
			if (i + 1 >= n)
				return 0;
			i += 2;
		} else if (p[i] == '[') {
			if ((span = glob_class(p + i, n - i, 0, &hit)) == 0)
				return 0;
			i += span;
		} else {
			i++;
		}
	}
	return 1;
}

char *
glob_scan_match(const char *prefix, const char *pat, size_t *len)
{
	size_t pl = strlen(prefix), tl = strlen(pat), o = 0, i;
	char *m = xmalloc(2 * pl + tl + 4);

	for (i = 0; i < pl; i++) {
		if (strchr("*?[]\\{}^-", prefix[i]) != NULL)
			m[o++] = '\\';
		m[o++] = prefix[i];
	}
	m[o++] = '{';
	memcpy(m + o, pat, tl);
	o += tl;
	memcpy(m + o, "}*", 3);
	*len = o + 2;
	return m;
}
