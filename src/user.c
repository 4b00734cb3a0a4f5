// SPDX-License-Identifier: MIT
/* The holder's user name, as cheaply as it can be had right. */
#include "user.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger files are left to NSS: reading them whole costs more than it. */
#define FILE_MAX (1 << 20)

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

/* The whole of a regular file, NUL-terminated, or NULL. */
static char *
slurp(const char *path)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n = -1;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size < FILE_MAX &&
	    (buf = malloc((size_t)st.st_size + 1)) != NULL) {
		do
			n = read(fd, buf, (size_t)st.st_size + 1);
		while (n < 0 && errno == EINTR);
	}
	close(fd);
	/* A file that grew while we read it is not trusted whole; one with
	 * a NUL byte glibc reads past, and so would we not. */
	if (buf != NULL && (n < 0 || n > st.st_size ||
	    memchr(buf, '\0', (size_t)n) != NULL)) {
		free(buf);
		return NULL;
	}
	if (buf != NULL)
		buf[n] = '\0';
	return buf;
}

/* s past its leading white space, as glibc skips it (isspace: \f \v \r
 * too). */
static char *
skip_space(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

/* The next line of *p (its end cut), advancing *p; NULL at the end. */
static char *
next_line(char **p)
{
	char *s = *p, *nl;

	if (*s == '\0')
		return NULL;
	if ((nl = strchr(s, '\n')) != NULL) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

/*
 * Does nsswitch.conf text make "files" the first source NSS asks for
 * passwd? Only a single passwd line whose first word is files counts: a
 * missing one (glibc's default differs between versions), two, or
 * anything first (compat, sss, ldap, systemd) leaves the question to NSS.
 */
static int
files_first(char *conf)
{
	char *line, *p = conf, *w;
	int seen = 0, first = 0;

	while ((line = next_line(&p)) != NULL) {
		if ((w = strchr(line, '#')) != NULL)
			*w = '\0';
		line = skip_space(line);
		if (strncmp(line, "passwd", 6) != 0)
			continue;
		w = skip_space(line + 6);
		if (*w != ':')
			continue;
		w = skip_space(w + 1);
		seen++;
		first = strncmp(w, "files", 5) == 0 &&
		    (w[5] == '\0' || isspace((unsigned char)w[5]));
		/* An action ([SUCCESS=continue]) may not take its answer. */
		if (first && strchr(w + 5, '[') != NULL)
			first = 0;
	}
	return seen == 1 && first;
}

/* Is s (to the next ':') a plain decimal number? Then its value. */
static int
field_number(const char *s, unsigned long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno == 0 && *end == ':';
}

/*
 * The name of uid's first line in passwd text, as NSS's files source
 * reads it, into buf: 1 found, 0 not. -1 when a line is one the files
 * source may read otherwise than we do: +/- entries of the compat syntax,
 * a uid or gid field that is not a plain number (glibc's strtoul takes
 * " 1000" and "+1000", and skips a line whose gid it cannot read), fewer
 * than seven fields; then NSS must say.
 */
static int
files_name(char *text, uid_t uid, char *buf, size_t len)
{
	char *line, *p = text, *f2, *f3, *f4, *c;
	unsigned long v, g;
	int colons;

	while ((line = next_line(&p)) != NULL) {
		line = skip_space(line);
		if (*line == '\0' || *line == '#')
			continue;
		if (*line == '+' || *line == '-')
			return -1;
		if ((f2 = strchr(line, ':')) == NULL ||
		    (f3 = strchr(f2 + 1, ':')) == NULL)
			continue;
		f3++;
		if (!field_number(f3, &v))
			return -1;
		if (v != (unsigned long)uid)
			continue;
		f4 = strchr(f3, ':') + 1;
		for (colons = 0, c = line; *c != '\0'; c++)
			colons += *c == ':';
		if (!field_number(f4, &g) || colons < 6 ||
		    !plain_name(line, (size_t)(f2 - line), len))
			return -1;
		memcpy(buf, line, (size_t)(f2 - line));
		buf[f2 - line] = '\0';
		return 1;
	}
	return 0;
}

int
user_from_files(const char *nsswitch, const char *passwd, uid_t uid,
    char *buf, size_t len)
{
	char *conf, *text;
	int r = 0;

	if ((conf = slurp(nsswitch)) == NULL)
		return 0;
	if (files_first(conf) && (text = slurp(passwd)) != NULL) {
		r = files_name(text, uid, buf, len) == 1;
		free(text);
	}
	free(conf);
	return r;
}

/*
 * getpwuid() costs a run about 100us here (nsswitch.conf parsed into
 * NSS's tables, two tries at nscd's socket, /etc/passwd through stdio):
 * a twentieth of an uncontended run. login, su, sudo, cron, ssh and
 * systemd (User=) set $USER, $LOGNAME and $HOME together to the user they
 * switch to; what keeps an inherited $USER after a switch (sudo -E, su
 * -m/-p, runuser -m) keeps that user's $HOME too, which then belongs to
 * another uid than ours. So the name is believed only with a $HOME of our
 * own; never in a setuid run (secure_getenv). The record is information
 * for people (Redis ACLs guard the lock): one who sets $USER by hand gets
 * that name in it, as with git's or ssh's use of it. Without it (a
 * container, env -i), when nsswitch.conf asks files first, the uid's
 * line in /etc/passwd is the answer NSS would give (nscd, when it runs,
 * caches that same answer), read in 15us; NSS is asked otherwise.
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
	if (user_from_files("/etc/nsswitch.conf", "/etc/passwd", uid, buf,
	    len))
		return;
	if ((pw = getpwuid(uid)) != NULL)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}
