// SPDX-License-Identifier: MIT
/*
 * rlock.conf(5): find the files, refuse one that someone else could have
 * written, and cut each line into a name and a value for cli.c, which
 * checks the value with the command line's own parsers. A file is
 * trusted like OpenSSH's ssh_config: owned by the user or root, and
 * writable by nobody else, nor is its directory (whoever may write the
 * directory may put another file in its place). The user's file found
 * under another user's $HOME (sudo without -H) is theirs: skipped, with
 * a warning. Errors name FILE:LINE and are status 78, before anything
 * contacts Redis.
 */
#include "conffile.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exitcode.h"
#include "util.h"

int
conf_error(const struct conf_at *at, const char *fmt, ...)
{
	char text[1024], shown[1024], file[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* A value may hold an escape sequence; the terminal gets none. */
	printable(text, strlen(text), shown, sizeof(shown));
	printable(at->file, strlen(at->file), file, sizeof(file));
	if (at->line > 0)
		msg_err("%s:%d: %s", file, at->line, shown);
	else
		msg_err("%s: %s", file, shown);
	return RL_EXIT_CONFIG;
}

/* Blanks: space, tab, and the CR of a file written on Windows. */
static int
blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/*
 * "name", "name = value", blank lines and comments. A '#' starts a
 * comment at the start of a line or of the value, or after a blank, so a
 * '#' inside a value (a path, a prefix) stays part of it.
 */
static int
parse_line(char *line, const struct conf_at *at, conf_fn *fn, void *ctx)
{
	char *p = line, *name, *value = NULL, *e, found[64];

	while (blank(*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	name = p;
	while (*p && !blank(*p) && *p != '=')
		p++;
	e = p;
	while (blank(*p))
		p++;
	if (e == name)
		return conf_error(at, "a setting needs a name before '='");
	if (*p == '=') {
		value = ++p;
		while (blank(*value))
			value++;
		for (p = value; *p; p++)
			if (*p == '#' && (p == value || blank(p[-1])))
				break;
		*p = '\0';
		while (p > value && blank(p[-1]))
			*--p = '\0';
	} else if (*p != '\0' && *p != '#') {
		printable(p, strlen(p), found, sizeof(found));
		*e = '\0';
		return conf_error(at, "expected '%s = VALUE' or '%s' alone, "
		    "found '%s' after it", name, name, found);
	}
	*e = '\0';
	return fn(ctx, name, value, at);
}

/* /dev/null names no file: RLOCK_CONFIG=/dev/null reads none. */
static int
is_dev_null(const struct stat *st)
{
	struct stat n;

	return S_ISCHR(st->st_mode) && stat("/dev/null", &n) == 0 &&
	    S_ISCHR(n.st_mode) && n.st_rdev == st->st_rdev;
}

/* Who else could have written what the open file says. */
static int
trusted(const char *path, const struct stat *st, const struct conf_at *at)
{
	uid_t uid = getuid();
	struct stat d;
	char *copy, *dir, shown[512];
	int st_ok = 0;

	if (S_ISDIR(st->st_mode))
		return conf_error(at, "is a directory");
	if (st->st_uid != 0 && st->st_uid != uid)
		return conf_error(at, "refused: owned by uid %ld, neither you "
		    "nor root (chown it)", (long)st->st_uid);
	if (st->st_mode & 022)
		return conf_error(at, "refused: writable by %s (mode %04o; "
		    "chmod go-w it)", st->st_mode & 002 ? "anyone" :
		    "its group", (unsigned)(st->st_mode & 07777));
	/* dirname may return a "." of its own: copy is what to free. */
	copy = xstrdup(path);
	dir = dirname(copy);
	printable(dir, strlen(dir), shown, sizeof(shown));
	if (stat(dir, &d) < 0)
		st_ok = conf_error(at, "cannot check its directory %s: %s",
		    shown, strerror(errno));
	else if (d.st_uid != 0 && d.st_uid != uid)
		st_ok = conf_error(at, "refused: its directory %s is owned by "
		    "uid %ld, neither you nor root", shown, (long)d.st_uid);
	else if ((d.st_mode & 022) && !(d.st_mode & S_ISVTX))
		st_ok = conf_error(at, "refused: its directory %s is writable "
		    "by others, who could put another file in its place "
		    "(chmod go-w it)", shown);
	free(copy);
	return st_ok;
}

/*
 * Where the user's file was found: under $XDG_CONFIG_HOME or $HOME (var),
 * whose value is dir. NULL for the other files.
 */
struct conf_base {
	const char *var;
	const char *dir;
};

/*
 * Is the user's file someone else's? Its base belongs to another user
 * when sudo (without -H) or su (without -) kept that user's $HOME: the
 * file's settings are then theirs to choose, not ours (a password-file
 * it names would be read with our rights and sent to the server it
 * names). Returns that user's uid (0: root's), or -1 when the base is
 * ours or cannot be checked (the file's own checks then decide).
 */
static long
base_owner(const struct conf_base *b)
{
	struct stat st;

	if (b == NULL || stat(b->dir, &st) < 0 || st.st_uid == getuid())
		return -1;
	return (long)st.st_uid;
}

/* Not reading the user's file (shown: its path, printable) under another
 * user's base (why: "", or why it could not be read). Returns 0: the run
 * goes on without it. */
static int
skip_theirs(const char *shown, const struct conf_base *b, long owner,
    const char *why)
{
	char who[32];

	if (owner == 0)
		snprintf(who, sizeof(who), "root");
	else
		snprintf(who, sizeof(who), "uid %ld", owner);
	msg_warn("skipping %s: %s%s$%s is %s's, not yours (sudo without -H? "
	    "su without -?); only your own file is read, or one given with "
	    "--config FILE", shown, why, why[0] ? ", and " : "", b->var, who);
	return 0;
}

/* A file that exists but cannot be read: 78; for a default file (by:
 * NULL) refused to us, how to fix it (its settings, a prefix or a lease,
 * are not to be missed silently: runs with and without them would not
 * exclude each other). */
static int
unreadable(const char *shown, const char *by, int e,
    const struct conf_base *b)
{
	if (by != NULL || e != EACCES) {
		msg_err("cannot read %s%s%s: %s", by ? by : "", by ? " " : "",
		    shown, strerror(e));
		return RL_EXIT_CONFIG;
	}
	msg_err("cannot read %s: %s; make it readable (chmod %s %s%s), or "
	    "read no configuration file (--config /dev/null, or "
	    "RLOCK_CONFIG=/dev/null)", shown, strerror(e), b ? "u+r" : "a+r",
	    shown, b ? "" : "; it holds no secret");
	return RL_EXIT_CONFIG;
}

/*
 * One file. by: what named it ("--config", "RLOCK_CONFIG"), for whom a
 * missing file is an error; NULL for a default file, which may be absent.
 * b: where the user's file was found; NULL for the others.
 */
static int
read_file(const char *path, const char *by, const struct conf_base *b,
    conf_fn *fn, void *ctx)
{
	struct conf_at at = { path, 0 };
	struct stat st;
	char *line = NULL, shown[512];
	long owner = base_owner(b);
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int r = 0;

	printable(path, strlen(path), shown, sizeof(shown));
	if ((f = fopen(path, "re")) == NULL) {
		if (by == NULL && (errno == ENOENT || errno == ENOTDIR))
			return 0;
		if (errno == EACCES && owner >= 0)
			return skip_theirs(shown, b, owner, strerror(errno));
		return unreadable(shown, by, errno, b);
	}
	/* Root's files pass the checks below, as the system file does. */
	if (owner > 0) {
		fclose(f);
		return skip_theirs(shown, b, owner, "");
	}
	if (fstat(fileno(f), &st) < 0)
		r = conf_error(&at, "%s", strerror(errno));
	else if (!is_dev_null(&st))
		r = trusted(path, &st, &at);
	while (r == 0 && (n = getline(&line, &cap, f)) >= 0) {
		at.line++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (strlen(line) != (size_t)n)
			r = conf_error(&at, "holds a NUL byte");
		else
			r = parse_line(line, &at, fn, ctx);
	}
	if (r == 0 && ferror(f))
		r = conf_error(&at, "%s", strerror(errno));
	free(line);
	fclose(f);
	if (r == 0)
		msg_verbose("read the configuration file %s", shown);
	return r;
}

/* ${XDG_CONFIG_HOME:-$HOME/.config}/rlock/rlock.conf, or NULL; *b says
 * which. */
static char *
user_file(struct conf_base *b)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
	char *p;

	/* The XDG spec: a relative value is invalid and to be ignored. */
	if (x && x[0] == '/') {
		*b = (struct conf_base){ "XDG_CONFIG_HOME", x };
		p = xmalloc(strlen(x) + sizeof("/rlock/rlock.conf"));
		return strcat(strcpy(p, x), "/rlock/rlock.conf");
	}
	if (h == NULL || h[0] == '\0')
		return NULL;
	*b = (struct conf_base){ "HOME", h };
	p = xmalloc(strlen(h) + sizeof("/.config/rlock/rlock.conf"));
	return strcat(strcpy(p, h), "/.config/rlock/rlock.conf");
}

int
conf_load(const char *path, const char *by, conf_fn *fn, void *ctx)
{
	struct conf_base b;
	const char *dir;
	char *sys, *user;
	int r;

	if (path)
		return read_file(path, by, NULL, fn, ctx);
	/* For the tests, which cannot write /etc; see rlock.conf(5). */
	if ((dir = getenv("RLOCK_SYSCONFDIR")) == NULL || *dir == '\0')
		dir = SYSCONFDIR;
	sys = xmalloc(strlen(dir) + sizeof("/rlock.conf"));
	strcat(strcpy(sys, dir), "/rlock.conf");
	r = read_file(sys, NULL, NULL, fn, ctx);
	free(sys);
	if (r == 0 && (user = user_file(&b)) != NULL) {
		r = read_file(user, NULL, &b, fn, ctx);
		free(user);
	}
	return r;
}
