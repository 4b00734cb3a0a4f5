// SPDX-License-Identifier: MIT
/* rlock's reply type and failure records; see reply.h. */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "exitcode.h"
#include "util.h"

void
reply_free(struct reply *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->elements; i++)
		reply_free(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

int
reply_int(const struct reply *r, long long *out)
{
	if (r->type != REPLY_INTEGER)
		return -1;
	*out = r->integer;
	return 0;
}

void
failure_set(struct failure *f, int status, const char *fmt, ...)
{
	va_list ap;

	f->status = status;
	f->ours = 0;
	f->hello = 0;
	f->undo_owed = 0;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

void
failure_clear(struct failure *f)
{
	f->status = 0;
	f->ours = 0;
	f->hello = 0;
	f->undo_owed = 0;
	f->why[0] = '\0';
}

static int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int
reply_status(const struct reply *r)
{
	const char *s = r->str ? r->str : "";

	if (acl_is_refusal(s))
		return RL_EXIT_NOPERM;
	if (starts(s, "NOAUTH") || starts(s, "WRONGPASS") ||
	    starts(s, "NOPERM") || starts(s, "ERR invalid password") ||
	    starts(s, "ERR invalid username-password") ||
	    starts(s, "ERR AUTH <password> called without") ||
	    starts(s, "ERR Client sent AUTH") ||
	    starts(s, SCRIPT_ACL_DENIED))
		return RL_EXIT_NOPERM;
	if (starts(s, "LOADING") || starts(s, "BUSY") ||
	    starts(s, "MASTERDOWN") || starts(s, "TRYAGAIN") ||
	    starts(s, "CLUSTERDOWN") ||
	    starts(s, "ERR max number of clients"))
		return RL_EXIT_UNAVAILABLE;
	return RL_EXIT_PROTOCOL;
}

int
failure_transient(int status)
{
	return status == RL_EXIT_UNAVAILABLE;
}

/*
 * Redis 7 ends an error raised inside a script with " script: SHA, on
 * @user_script:LINE." The SHA of our own script tells the user nothing
 * and pushes the part that matters out of a one-line message: the length
 * of s without it.
 */
static size_t
script_trailer(const char *s, size_t len)
{
	const char *t = strstr(s, " script: ");

	if (t != NULL && strstr(t, "@user_script:") != NULL)
		return (size_t)(t - s);
	return len;
}

int
failure_from_reply(struct failure *f, const char *what,
    const struct reply *r)
{
	char text[160];
	const char *sp;

	if (r->type == REPLY_ERROR && acl_is_refusal(r->str)) {
		/* The permission it lacks, in words (acl.c). */
		acl_explain(r->str, text, sizeof(text));
		failure_set(f, RL_EXIT_NOPERM, "%s: %s", what, text);
	} else if (r->type == REPLY_ERROR &&
	    strncmp(r->str, "RLOCK_", 6) == 0 &&
	    (sp = strchr(r->str, ' ')) != NULL) {
		/* Our own scripts' refusals are sentences for the user. */
		printable(sp + 1, strlen(sp + 1), text, sizeof(text));
		failure_set(f, RL_EXIT_PROTOCOL, "%s", text);
		f->ours = 1;
	} else if (r->type == REPLY_ERROR) {
		printable(r->str, script_trailer(r->str, r->len), text,
		    sizeof(text));
		failure_set(f, reply_status(r), "%s: Redis answered: %s",
		    what, text);
	} else {
		failure_set(f, RL_EXIT_PROTOCOL, "%s: unexpected reply of "
		    "type %d", what, (int)r->type);
	}
	return f->status;
}
