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
failure_make(struct failure *f, enum fail_kind kind, int status,
    const char *fmt, ...)
{
	va_list ap;

	*f = (struct failure){ .status = status, .kind = kind };
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

void
failure_clear(struct failure *f)
{
	memset(f, 0, sizeof(*f));
}

static int
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The kind of an error reply, from Redis's code and text. */
static enum fail_kind
reply_kind(const struct reply *r)
{
	const char *s = r->str ? r->str : "";

	if (acl_is_refusal(s))
		return FAIL_NOPERM;
	if (starts(s, "NOAUTH") || starts(s, "WRONGPASS") ||
	    starts(s, "ERR invalid password") ||
	    starts(s, "ERR invalid username-password") ||
	    starts(s, "ERR AUTH <password> called without") ||
	    starts(s, "ERR Client sent AUTH"))
		return FAIL_CREDENTIALS;
	if (starts(s, "LOADING") || starts(s, "BUSY") ||
	    starts(s, "MASTERDOWN") || starts(s, "TRYAGAIN") ||
	    starts(s, "CLUSTERDOWN") ||
	    starts(s, "ERR max number of clients"))
		return FAIL_BUSY;
	return FAIL_SERVER;
}

int
reply_status(const struct reply *r)
{
	switch (reply_kind(r)) {
	case FAIL_NOPERM:
	case FAIL_CREDENTIALS:
		return RL_EXIT_NOPERM;
	case FAIL_BUSY:
		return RL_EXIT_UNAVAILABLE;
	default:
		return RL_EXIT_PROTOCOL;
	}
}

/* enum peer_cmd's commands as sent. */
static const char *const CMD_NAMES[] = {
	[CMD_SELECT] = "SELECT",
	[CMD_CONFIG] = "CONFIG",
	[CMD_SCAN] = "SCAN",
	[CMD_EVALSHA_RO] = "EVALSHA_RO",
	[CMD_EVAL_RO] = "EVAL_RO",
	[CMD_BLPOP] = "BLPOP",
	[CMD_SSUBSCRIBE] = "SSUBSCRIBE",
};

enum peer_cmd
peer_cmd(const char *name, size_t len)
{
	size_t i;

	for (i = CMD_SELECT; i < sizeof(CMD_NAMES) / sizeof(CMD_NAMES[0]); i++)
		if (strlen(CMD_NAMES[i]) == len &&
		    memcmp(CMD_NAMES[i], name, len) == 0)
			return (enum peer_cmd)i;
	return CMD_NONE;
}

int
failure_closed_on(const struct failure *f, enum peer_cmd cmd)
{
	return f->kind == FAIL_DROPPED && f->closed_on == cmd;
}

int
failure_refused(struct failure *f, enum peer_cmd cmd)
{
	if (!failure_closed_on(f, cmd))
		return 0;
	failure_make(f, FAIL_REFUSED, RL_EXIT_PROTOCOL, "the server or a "
	    "proxy in front of it refused %s (it closed the connection on "
	    "it)", CMD_NAMES[cmd]);
	f->closed_on = cmd;
	return 1;
}

int
failure_transient(int status)
{
	return status == RL_EXIT_UNAVAILABLE;
}

int
failure_retry(const struct failure *f)
{
	/* Plain text against a TLS port, or the reverse, is the URL's
	 * mistake, not the weather: no later try changes it. */
	if (f->kind == FAIL_TLS_PLAIN)
		return 0;
	/* Told to stop: no try is worth it. */
	if (f->kind == FAIL_INTERRUPTED)
		return 0;
	if (f->status == RL_EXIT_UNAVAILABLE)
		return 1;
	switch (f->kind) {
	case FAIL_UNREACHABLE:
	case FAIL_DROPPED:
	case FAIL_TIMEOUT:
	case FAIL_BUSY:
		return 1;
	case FAIL_SERVER:
		/* Sent to a node that is gone, or moving. */
		return strcmp(f->code, "MOVED") == 0 ||
		    strcmp(f->code, "ASK") == 0;
	default:
		return 0;
	}
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

/* An error reply's code (its first word) and text into f. */
static void
keep_words(struct failure *f, const struct reply *r)
{
	size_t n = strcspn(r->str, " ");

	if (n >= sizeof(f->code))
		n = 0;
	memcpy(f->code, r->str, n);
	f->code[n] = '\0';
	printable(r->str, script_trailer(r->str, r->len), f->said,
	    sizeof(f->said));
}

int
failure_from_reply(struct failure *f, const char *what,
    const struct reply *r)
{
	char text[160], rule[sizeof(f->acl_rule)];
	const char *sp;

	if (r->type == REPLY_ERROR && acl_is_refusal(r->str)) {
		/* The permission it lacks, in words and as a rule (acl.c). */
		acl_explain(r->str, text, sizeof(text), rule, sizeof(rule));
		failure_make(f, FAIL_NOPERM, RL_EXIT_NOPERM, "%s: %s", what,
		    text);
		memcpy(f->acl_rule, rule, sizeof(rule));
	} else if (r->type == REPLY_ERROR &&
	    strncmp(r->str, "RLOCK_", 6) == 0 &&
	    (sp = strchr(r->str, ' ')) != NULL) {
		/* Our own scripts' refusals are sentences for the user. */
		printable(sp + 1, strlen(sp + 1), text, sizeof(text));
		failure_make(f, FAIL_SCRIPT, RL_EXIT_PROTOCOL, "%s", text);
	} else if (r->type == REPLY_ERROR) {
		printable(r->str, script_trailer(r->str, r->len), text,
		    sizeof(text));
		failure_make(f, reply_kind(r), reply_status(r),
		    "%s: Redis answered: %s", what, text);
	} else {
		failure_make(f, FAIL_REPLY, RL_EXIT_PROTOCOL, "%s: unexpected "
		    "reply of type %d", what, (int)r->type);
	}
	if (r->type == REPLY_ERROR)
		keep_words(f, r);
	return f->status;
}
