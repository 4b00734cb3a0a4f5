// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: url_parse, url_redacted and url_password_span on any
 * bytes (a NUL-terminated copy, as argv and the environment give them).
 * Besides "no crash", it checks that the password we blank in argv is the
 * one we send: the span exists exactly when a non-empty password parsed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_span(const char *url, const struct endpoint *ep, int parsed)
{
	size_t off = 0, len = 0;
	int r = url_password_span(url, &off, &len);

	if (r == 0 && (off + len > strlen(url) || len == 0))
		abort();
	if (!parsed || ep->pass == NULL)
		return;
	/* A password that went to AUTH must be blanked from argv. */
	if ((*ep->pass != '\0') != (r == 0))
		abort();
	/* Percent-decoding only shrinks; without '%' it is the same text. */
	if (r == 0 && (len < strlen(ep->pass) ||
	    (memchr(url + off, '%', len) == NULL &&
	    (len != strlen(ep->pass) || memcmp(url + off, ep->pass, len)))))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1), small[8], buf[1024];
	struct endpoint ep;
	const char *why = NULL;
	int parsed;

	memcpy(url, data, size);
	url[size] = '\0';
	memset(&ep, 0, sizeof(ep));
	parsed = url_parse(url, &ep, &why) == 0;
	if (!parsed && why == NULL)
		abort();	/* every refusal says why */
	if (parsed) {
		url_redacted(&ep, buf, sizeof(buf));
		url_redacted(&ep, small, sizeof(small));
		if (ep.pass && strstr(buf, ":***@") == NULL)
			abort();
		if (strchr(buf, '\n') || strchr(buf, '\r'))
			abort();	/* messages stay one line */
	}
	check_span(url, &ep, parsed);
	url_free(&ep);
	free(url);
	return 0;
}
