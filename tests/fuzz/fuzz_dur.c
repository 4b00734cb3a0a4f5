// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the number parsers and formatters of util.c on any
 * bytes. dur_parse and int_parse must stay in their bounds and agree with
 * themselves; dur_format must fit any buffer; printable and json_string
 * must never let a control byte through. The input is one NUL-terminated
 * string; its first 8 bytes also serve as a raw int64 for dur_format.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parsing what dur_format wrote gives the value back, cut to its digits. */
static void
check_dur_round_trip(int64_t ms)
{
	char buf[32];
	int64_t back = -1;

	dur_format(ms, buf, sizeof(buf));
	if (ms < 60 * 1000) {	/* "850ms", "12.5s": dur_parse's forms */
		if (dur_parse(buf, &back) < 0)
			abort();
		if (ms < 1000 ? back != ms : back != ms - ms % 100)
			abort();
	}
}

static void
check_dur(const char *s)
{
	int64_t ms = -1, again = -1;
	char with_ms[64];

	if (dur_parse(s, &ms) < 0) {
		if (ms != -1)
			abort();	/* a refusal leaves *ms alone */
		return;
	}
	if (ms < 0 || ms > DUR_MAX_MS)
		abort();
	check_dur_round_trip(ms);
	/* A plain number is seconds: "N" and "Ns" agree. */
	if (strlen(s) < sizeof(with_ms) - 2 && s[0] != '\0' &&
	    s[strlen(s) - 1] >= '0' && s[strlen(s) - 1] <= '9') {
		snprintf(with_ms, sizeof(with_ms), "%ss", s);
		if (dur_parse(with_ms, &again) < 0 || again != ms)
			abort();
	}
}

/*
 * The oracle: int_parse's grammar is -?[0-9]+ and nothing else, so it
 * must agree exactly with strtoll (fine in a test, not in rlock: it takes
 * spaces, '+' and the locale) on what lies within [min, max].
 */
static void
check_int_oracle(const char *s, long long min, long long max, int ok,
    long long v)
{
	const char *d = s + (s[0] == '-');
	long long want;
	char *end;

	if (d[0] == '\0' || strspn(d, "0123456789") != strlen(d)) {
		if (ok)
			abort();
		return;
	}
	errno = 0;
	want = strtoll(s, &end, 10);
	if (errno == ERANGE || *end != '\0' || want < min || want > max) {
		if (ok)
			abort();
		return;
	}
	if (!ok || v != want)
		abort();
}

static void
check_int(const char *s)
{
	static const long long bounds[][2] = {
		{ 0, 255 }, { 1, 65535 }, { -5, 5 }, { 0, INT64_MAX },
		{ INT64_MIN, INT64_MAX },
	};
	char again[32];
	long long v, w;
	size_t i;

	for (i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		v = -42;
		if (int_parse(s, bounds[i][0], bounds[i][1], &v) < 0) {
			if (v != -42)
				abort();
			check_int_oracle(s, bounds[i][0], bounds[i][1], 0, 0);
			continue;
		}
		check_int_oracle(s, bounds[i][0], bounds[i][1], 1, v);
		if (v < bounds[i][0] || v > bounds[i][1])
			abort();
		snprintf(again, sizeof(again), "%lld", v);
		if (int_parse(again, bounds[i][0], bounds[i][1], &w) < 0 ||
		    w != v)
			abort();
	}
}

/* Only printable ASCII out of printable(), NUL-terminated in buflen. */
static void
check_printable(const char *s, size_t len, size_t buflen)
{
	char buf[300];
	size_t i;

	memset(buf, 'Z', sizeof(buf));
	printable(s, len, buf, buflen);
	if (buf[buflen] != 'Z')
		abort();	/* wrote past buflen */
	if (buflen == 0)
		return;
	if (memchr(buf, '\0', buflen) == NULL)
		abort();
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 ||
		    (unsigned char)buf[i] >= 0x7f)
			abort();
}

static void
check_json(const char *s, size_t len)
{
	char *out = NULL;
	size_t n = 0, i;
	FILE *f = open_memstream(&out, &n);

	if (f == NULL)
		return;
	json_string(f, s, len);
	fclose(f);
	if (n < 2 || out[0] != '"' || out[n - 1] != '"')
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[40];
	int64_t raw = 0;

	memcpy(s, data, size);
	s[size] = '\0';
	check_dur(s);
	check_int(s);
	if (size >= sizeof(raw)) {
		memcpy(&raw, data, sizeof(raw));
		dur_format(raw, buf, sizeof(buf));
		dur_format(raw, buf, 1 + (size_t)(data[0] % 8));
		if (raw >= 0 && raw <= DUR_MAX_MS)
			check_dur_round_trip(raw);
	}
	check_printable((const char *)data, size,
	    size > 0 ? data[0] % 256 : 0);
	check_json((const char *)data, size);
	free(s);
	return 0;
}
