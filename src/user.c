// SPDX-License-Identifier: MIT
/* The holder's user name, as cheaply as it can be had right. */
#include "user.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A name we may put in the holder record: no control characters. */
static int
plain_name(const char *s, size_t n, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return n > 0 && n < len;
}

/*
 * getpwuid() parses nsswitch.conf into NSS's tables, tries nscd's socket
 * and reads /etc/passwd through stdio: a share of an uncontended run
 * worth sparing where the answer is at hand. login, su, sudo, cron, ssh and
 * systemd (User=) set $USER, $LOGNAME and $HOME together to the user they
 * switch to; what keeps an inherited $USER after a switch (sudo -E, su
 * -m/-p, runuser -m) keeps that user's $HOME too, which then belongs to
 * another uid than ours. So the name is believed only with a $HOME of our
 * own; never in a setuid run (secure_getenv). The record is information
 * for people (Redis ACLs guard the lock): one who sets $USER by hand gets
 * that name in it, as with git's or ssh's use of it. Without it (a
 * container, env -i), NSS is asked.
 */
void
user_name(char *buf, size_t len)
{
	const char *name = secure_getenv("USER"), *home;
	struct passwd *pw;
	struct stat st;
	uid_t uid = geteuid();

	if (name == NULL || !plain_name(name, strlen(name), len))
		name = secure_getenv("LOGNAME");
	home = secure_getenv("HOME");
	if (name != NULL && plain_name(name, strlen(name), len) &&
	    home != NULL && home[0] == '/' && stat(home, &st) == 0 &&
	    st.st_uid == uid) {
		snprintf(buf, len, "%s", name);
		return;
	}
	if ((pw = getpwuid(uid)) != NULL)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}
