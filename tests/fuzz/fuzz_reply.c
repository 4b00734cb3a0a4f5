// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the input as RESP from a server, read by conn_parse
 * as rlock's connections read it (hiredis's reader, then rlock's reply
 * type); the first complete reply goes to each of rlock's reply checks
 * (acquire, the integer replies of extend, release and dequeue, status's
 * inspect, SUBSCRIBE's confirmation, BLPOP) and, as a reply they refuse
 * would, to failure_from_reply. No network.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "lock.h"
#include "report_view.h"
#include "single.h"
#include "wake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strings a parser copied out of r are NUL-terminated in their buffers. */
static void
check_busy(const struct lock_busy *b)
{
	if (memchr(b->user, '\0', sizeof(b->user)) == NULL ||
	    memchr(b->host, '\0', sizeof(b->host)) == NULL ||
	    memchr(b->pid, '\0', sizeof(b->pid)) == NULL ||
	    memchr(b->cmd, '\0', sizeof(b->cmd)) == NULL)
		abort();
}

/* A view that parsed must be safe to walk as report_view.c walks it. */
static void
check_view(const struct view *v)
{
	size_t i;

	if (v->holders == NULL || v->waiters == NULL || v->mode == NULL)
		abort();
	if (v->mode[0] != 'f' && v->holders->elements == 0)
		abort();
	for (i = 0; i < v->holders->elements; i++)
		if (v->holders->element[i]->elements != INSPECT_HOLDERS_N)
			abort();
	if (v->last == NULL || (v->last->elements != 0 &&
	    v->last->elements != INSPECT_LAST_N))
		abort();
	for (i = 0; i < v->waiters->elements; i++)
		if (v->waiters->element[i]->elements != VIEW_WHO_N)
			abort();
}

static void
check_reply(const struct reply *r)
{
	struct failure f;
	struct lock_busy busy;
	struct view v;
	int64_t fence;
	long long n;

	memset(&f, 0, sizeof(f));
	memset(&busy, 0, sizeof(busy));
	memset(&v, 0, sizeof(v));
	switch (single_parse_acquire(r, &fence, &busy)) {
	case LOCK_BUSY:
		check_busy(&busy);
		break;
	case LOCK_GRANTED:
		break;
	case LOCK_ERROR:
		/* What lock_acquire does with a reply it refuses. */
		if (failure_from_reply(&f, "acquire", r) == 0 ||
		    memchr(f.why, '\0', sizeof(f.why)) == NULL)
			abort();
		break;
	}
	(void)reply_int(r, &n);
	if (report_view_parse(&v, r) == 0)
		check_view(&v);
	(void)wake_parse_subscribe(r);
	(void)wake_parse_unsubscribed(r);
	(void)wake_parse_pop(r);
}

/*
 * Does the input announce an aggregate of more elements than it has bytes?
 * hiredis allocates an aggregate's element vector from its header, before
 * any element arrives (0.14 has no limit, 1.x's maxelements is 2^32-1), so
 * "*300000000\r\n" alone costs gigabytes: hiredis's behaviour with a
 * hostile server, not rlock's. Each element takes at least 3 bytes, so
 * such an aggregate never completes into a reply our checks would see;
 * skipping it loses nothing. Any '*' (and RESP3's "%~>|") followed by
 * digits counts, inside a string too: too many rather than too few.
 */
static int
huge_aggregate(const uint8_t *data, size_t size)
{
	size_t i, j;
	uint64_t n;

	for (i = 0; i < size; i++) {
		if (memchr("*%~>|", data[i], 5) == NULL)
			continue;
		for (n = 0, j = i + 1; j < size && data[j] >= '0' &&
		    data[j] <= '9' && n <= size; j++)
			n = n * 10 + (uint64_t)(data[j] - '0');
		if (n > size)
			return 1;
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reply *r = NULL;

	if (huge_aggregate(data, size))
		return 0;
	if (conn_parse((const char *)data, size, &r) == 1) {
		check_reply(r);
		reply_free(r);
	}
	return 0;
}
