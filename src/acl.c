// SPDX-License-Identifier: MIT
/*
 * Reading ACL refusals. Redis words them three ways: NOPERM on a command
 * we sent ("no permissions to run the 'blpop' command", "... to access one
 * of the keys / channels used as arguments"); the same inside a script on
 * Redis 6; and on Redis 7, inside a script, "ERR The user executing the
 * script can't run this command or subcommand" (or "can't access at least
 * one of the keys", "can't publish to the channel"), which names nothing.
 * Our scripts therefore ask first and say "RLOCK_NOPERM +cmd", "RLOCK_NOPERM
 * ~ KEY CMD" or "RLOCK_NOPERM & CHANNEL CMD" (lua/lib/acl.lua).
 */
#include "acl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static char acl_prefix[256] = "rlock:";

void
acl_set_prefix(const char *prefix)
{
	printable(prefix, strlen(prefix), acl_prefix, sizeof(acl_prefix));
}

static const char SCRIPT_CMD[] = "The user executing the script can't run";
static const char SCRIPT_KEY[] =
    "The user executing the script can't access";
static const char SCRIPT_CHAN[] =
    "The user executing the script can't publish";

int
acl_is_refusal(const char *err)
{
	return strncmp(err, "NOPERM", 6) == 0 ||
	    strncmp(err, "RLOCK_NOPERM ", 13) == 0 ||
	    strstr(err, ": NOPERM ") != NULL ||
	    strstr(err, SCRIPT_CMD) != NULL ||
	    strstr(err, SCRIPT_KEY) != NULL ||
	    strstr(err, SCRIPT_CHAN) != NULL;
}

/* "blpop" of "...to run the 'blpop' command" into cmd; 0, or -1. */
static int
named_command(const char *err, char *cmd, size_t len)
{
	const char *p = strstr(err, "to run the '"), *q;

	if (p == NULL)
		return -1;
	p += strlen("to run the '");
	if ((q = strchr(p, '\'')) == NULL || q == p || (size_t)(q - p) >= len)
		return -1;
	memcpy(cmd, p, (size_t)(q - p));
	cmd[q - p] = '\0';
	return 0;
}

static void
upper(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	buf[i] = '\0';
}

/* Our scripts' "RLOCK_NOPERM ..." into words, and the rule it lacks. */
static void
explain_ours(const char *what, char *buf, size_t len, char *rule,
    size_t rlen)
{
	char name[300], cmd[64], low[64], shown[300];
	const char *sp;
	size_t i;

	if (what[0] == '+') {
		snprintf(name, sizeof(name), "%s", what + 1);
		upper(name, cmd, sizeof(cmd));
		if ((sp = strchr(cmd, '|')) != NULL)
			cmd[sp - cmd] = ' ';
		printable(what, strlen(what), shown, sizeof(shown));
		snprintf(buf, len, ACL_LACKS "%s, for %s", shown, cmd);
		snprintf(rule, rlen, "%s", shown);
		return;
	}
	/* "~ KEY CMD" or "& CHANNEL CMD"; KEY may hold blanks. */
	sp = strrchr(what, ' ');
	if ((what[0] != '~' && what[0] != '&') || what[1] != ' ' ||
	    sp == NULL || sp < what + 2) {
		printable(what, strlen(what), shown, sizeof(shown));
		snprintf(buf, len, ACL_LACKS "a permission (%s)", shown);
		return;
	}
	printable(what + 2, (size_t)(sp - what - 2), shown, sizeof(shown));
	snprintf(cmd, sizeof(cmd), "%s", sp + 1);
	for (i = 0; cmd[i]; i++)
		low[i] = (char)tolower((unsigned char)cmd[i]);
	low[i] = '\0';
	/* A channel refused to a user who may run no pub/sub command at
	 * all: Redis cannot be asked which of the two it lacks. */
	if (what[0] == '&') {
		snprintf(rule, rlen, "&%s* +%s", acl_prefix, low);
		snprintf(buf, len, ACL_LACKS "&%s* or +%s, for %s on channel "
		    "%s", acl_prefix, low, cmd, shown);
	} else {
		snprintf(rule, rlen, "~%s*", acl_prefix);
		snprintf(buf, len, ACL_LACKS "~%s*, for %s on key %s",
		    acl_prefix, cmd, shown);
	}
}

void
acl_explain(const char *err, char *buf, size_t len, char *rule, size_t rlen)
{
	char cmd[64], up[64];

	rule[0] = '\0';
	if (strncmp(err, "RLOCK_NOPERM ", 13) == 0) {
		explain_ours(err + 13, buf, len, rule, rlen);
	} else if (named_command(err, cmd, sizeof(cmd)) == 0) {
		upper(cmd, up, sizeof(up));
		snprintf(rule, rlen, "+%s", cmd);
		snprintf(buf, len, ACL_LACKS "+%s, for %s", cmd, up);
	} else if (strstr(err, "one of the keys") || strstr(err, SCRIPT_KEY)) {
		snprintf(rule, rlen, "~%s*", acl_prefix);
		snprintf(buf, len, ACL_LACKS "~%s*, for rlock's keys",
		    acl_prefix);
	} else if (strstr(err, "one of the channels") ||
	    strstr(err, SCRIPT_CHAN)) {
		snprintf(rule, rlen, "&%s*", acl_prefix);
		snprintf(buf, len, ACL_LACKS "&%s*, for rlock's channels",
		    acl_prefix);
	} else {
		/* Redis 7 inside a script, unchecked: it names nothing. */
		snprintf(buf, len, ACL_LACKS "a command one of rlock's "
		    "scripts runs (Redis does not say which)");
	}
}

const char *
acl_cure(const char *rule, const char *user)
{
	static char cure[768];
	char who[128];

	if (rule == NULL || (*rule != '+' && *rule != '~' && *rule != '&')) {
		snprintf(cure, sizeof(cure), "see \"A Redis user for rlock\" "
		    "in rlock(1) for every permission it needs");
		return cure;
	}
	printable(user ? user : "default", strlen(user ? user : "default"),
	    who, sizeof(who));
	snprintf(cure, sizeof(cure), "add %s: ACL SETUSER %s %s (every "
	    "permission rlock needs: \"A Redis user for rlock\" in rlock(1))",
	    strchr(rule, ' ') ? "them" : "it", who, rule);
	return cure;
}
