// SPDX-License-Identifier: MIT
/*
 * The waker interface (waker.h), dispatched to the BLPOP waker
 * (wake_pop.c) or the subscription waker (wake_sub.c), and the checks of
 * their replies.
 */
#include "wake.h"

#include <stdlib.h>
#include <string.h>

int
wake_parse_subscribe(const struct reply *r)
{
	return r->type == REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REPLY_STRING &&
	    (strcmp(r->element[0]->str, "ssubscribe") == 0 ||
	    strcmp(r->element[0]->str, "subscribe") == 0);
}

int
wake_parse_unsubscribed(const struct reply *r)
{
	return r->type == REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REPLY_STRING &&
	    (strcmp(r->element[0]->str, "sunsubscribe") == 0 ||
	    strcmp(r->element[0]->str, "unsubscribe") == 0);
}

int
wake_parse_pop(const struct reply *r)
{
	if (r->type == REPLY_NIL)
		return 0;
	return r->type == REPLY_ARRAY ? 1 : -1;
}

int
waker_listen(struct waker *w)
{
	return w->ops->listen(w);
}

int
waker_listening(const struct waker *w)
{
	return w->ops->listening(w);
}

enum woke
waker_wait(struct waker *w, int64_t until, int sigfd)
{
	return w->ops->wait(w, until, sigfd, 0);
}

enum woke
waker_wait_expiry(struct waker *w, int64_t until, int sigfd)
{
	return w->ops->wait(w, until, sigfd, 1);
}

void
waker_cancel(struct waker *w)
{
	w->ops->cancel(w);
}

const struct failure *
waker_failure(const struct waker *w)
{
	return &w->fail;
}

void
waker_free(struct waker *w)
{
	if (w != NULL)
		w->ops->free(w);
}
