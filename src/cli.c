// SPDX-License-Identifier: MIT
/*
 * Command-line, environment and configuration-file parsing around one
 * table of options (cli_options): getopt's tables are made from it, and
 * argv, the variables and the files' settings all go through set_opt,
 * which keeps a value only where no higher source gave one. The first
 * getopt pass stops at the first non-option ("+"): before -k that word
 * may be a subcommand, after -k it is COMMAND, passed on untouched. Usage
 * errors are reported here, before anything contacts Redis.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conffile.h"
#include "exitcode.h"
#include "glob.h"
#include "keys.h"
#include "lock.h"
#include "mode.h"
#include "url.h"
#include "util.h"

enum {
	OPT_FAIR = 256, OPT_ON_LOST, OPT_KILL_AFTER, OPT_PASSWORD_FILE,
	OPT_CONNECT_TIMEOUT, OPT_PREFIX, OPT_JSON, OPT_FORCE, OPT_REDLOCK,
	OPT_TLS, OPT_TLS_CACERT, OPT_TLS_CACERTDIR, OPT_TLS_CERT, OPT_TLS_KEY,
	OPT_TLS_SNI, OPT_TLS_INSECURE,
	OPT_MIN_HOLD, OPT_MAX_HOLD, OPT_SYSLOG, OPT_PROMETHEUS, OPT_CONFIG,
	OPT_PID, OPT_EXPORT, OPT_REDISSON, OPT_END
};

/* Where an option applies: the modes whose command line takes it. */
#define IN(mode)	(1u << MODE_##mode)
#define IN_HOLD		(IN(RUN) | IN(LOCK))	/* a holder's */
#define IN_SUBS		(IN(STATUS) | IN(LIST) | IN(RELEASE))
#define IN_REDIS	(IN_HOLD | IN_SUBS)	/* every mode asking Redis */

#define VALUE	required_argument	/* an option that takes a value */
#define FLAG	no_argument		/* one that takes none */
#define NO_ENV	""			/* no variable sets it */
#define CONF_OK	""			/* a config file may set it */

/* The job's own options, which a file shared by every job may not set. */
#define JOBS " in a configuration file (only the connection, TLS and " \
	"lease options are; see rlock.conf(5))"

/*
 * One option of rlock: where it applies, which variables set it and
 * whether a file may. tests/check-options fails on a row that does not
 * say all three, and holds --help, rlock(1), rlock.conf(5), README.md and
 * the completions to the table.
 */
struct cli_option {
	const char *name;	/* --name, and a file's name for it */
	int val;		/* its letter (-k), or OPT_* */
	int arg;		/* VALUE or FLAG */
	unsigned in;		/* IN(): the command lines that take it */
	const char *env;	/* the variables that set it, blank-separated,
				 * the first one set wins; or NO_ENV */
	const char *conf;	/* CONF_OK, or why a file may not hold it:
				 * the words after "'NAME' is not allowed" */
};

/*
 * Every option once: the connection's (every mode that asks Redis), a
 * holder's (a run, rlock lock), then the messages' and the subcommands'.
 * A file may set the connection, TLS and lease options, what a host or a
 * user sets once; not the job's own options, and not tls-insecure: no
 * job should stop checking its server unasked.
 */
static const struct cli_option cli_options[] = {
	{ "url", 'u', VALUE, IN_REDIS, "RLOCK_URL REDIS_URL", CONF_OK },
	{ "redlock", OPT_REDLOCK, FLAG, IN_REDIS, NO_ENV, CONF_OK },
	{ "password-file", OPT_PASSWORD_FILE, VALUE, IN_REDIS,
	    "RLOCK_PASSWORD REDISCLI_AUTH", CONF_OK },
	{ "config", OPT_CONFIG, VALUE, IN_REDIS, "RLOCK_CONFIG",
	    ": a file does not name another" },
	{ "connect-timeout", OPT_CONNECT_TIMEOUT, VALUE, IN_REDIS, NO_ENV,
	    CONF_OK },
	{ "prefix", OPT_PREFIX, VALUE, IN_REDIS, NO_ENV, CONF_OK },
	{ "tls", OPT_TLS, FLAG, IN_REDIS, NO_ENV, CONF_OK },
	{ "tls-cacert", OPT_TLS_CACERT, VALUE, IN_REDIS, "RLOCK_TLS_CACERT",
	    CONF_OK },
	{ "tls-cacertdir", OPT_TLS_CACERTDIR, VALUE, IN_REDIS, NO_ENV,
	    CONF_OK },
	{ "tls-cert", OPT_TLS_CERT, VALUE, IN_REDIS, "RLOCK_TLS_CERT",
	    CONF_OK },
	{ "tls-key", OPT_TLS_KEY, VALUE, IN_REDIS, "RLOCK_TLS_KEY", CONF_OK },
	{ "tls-sni", OPT_TLS_SNI, VALUE, IN_REDIS, NO_ENV, CONF_OK },
	{ "tls-insecure", OPT_TLS_INSECURE, FLAG, IN_REDIS, NO_ENV,
	    ": a file would turn off the server's check for every job; give "
	    "--tls-insecure where it is meant" },
	{ "key", 'k', VALUE, IN_HOLD | IN(UNLOCK), NO_ENV,
	    ": a configuration file is shared by every job; give each its "
	    "-k KEY" },
	{ "nonblock", 'n', FLAG, IN_HOLD, NO_ENV, JOBS },
	{ "timeout", 'w', VALUE, IN_HOLD, NO_ENV, JOBS },
	{ "lease", 'l', VALUE, IN_HOLD, NO_ENV, CONF_OK },
	{ "conflict-exit-code", 'E', VALUE, IN_HOLD, NO_ENV, JOBS },
	{ "limit", 'N', VALUE, IN_HOLD, NO_ENV, JOBS },
	{ "shared", 's', FLAG, IN_HOLD, NO_ENV, JOBS },
	{ "exclusive", 'x', FLAG, IN_HOLD, NO_ENV, JOBS },
	{ "command", 'c', VALUE, IN(RUN), NO_ENV,
	    ": COMMAND goes on the command line" },
	{ "fair", OPT_FAIR, FLAG, IN_HOLD, NO_ENV, JOBS },
	{ "on-lost", OPT_ON_LOST, VALUE, IN_HOLD, NO_ENV, CONF_OK },
	{ "kill-after", OPT_KILL_AFTER, VALUE, IN_HOLD, NO_ENV, CONF_OK },
	{ "min-hold", OPT_MIN_HOLD, VALUE, IN_HOLD, NO_ENV, JOBS },
	{ "max-hold", OPT_MAX_HOLD, VALUE, IN_HOLD, NO_ENV, JOBS },
	{ "syslog", OPT_SYSLOG, FLAG, IN_HOLD, NO_ENV, CONF_OK },
	{ "pid", OPT_PID, VALUE, IN(LOCK), NO_ENV, JOBS },
	{ "export", OPT_EXPORT, FLAG, IN(LOCK), NO_ENV, JOBS },
	/* A key's protocol is the key's, not the host's. */
	{ "redisson", OPT_REDISSON, FLAG, IN_HOLD | IN(STATUS) | IN(RELEASE),
	    NO_ENV, JOBS },
	{ "quiet", 'q', FLAG, IN_REDIS | IN(UNLOCK), NO_ENV, JOBS },
	{ "verbose", 'v', FLAG, IN_REDIS | IN(UNLOCK), NO_ENV, JOBS },
	{ "json", OPT_JSON, FLAG, IN(STATUS) | IN(LIST), NO_ENV, JOBS },
	{ "prometheus", OPT_PROMETHEUS, FLAG, IN(STATUS), NO_ENV, JOBS },
	{ "force", OPT_FORCE, FLAG, IN(RELEASE), NO_ENV, JOBS },
	{ "help", 'h', FLAG, IN_REDIS | IN(UNLOCK), NO_ENV, JOBS },
	{ "version", 'V', FLAG, IN_HOLD, NO_ENV, JOBS },
	{ NULL, 0, 0, 0, NULL, NULL }
};

#define NOPT (sizeof(cli_options) / sizeof(cli_options[0]) - 1)

/* Where a value came from, lowest first: rlock.conf(5)'s precedence. */
enum from { FROM_DEFAULT, FROM_SYSTEM, FROM_USER, FROM_ENV, FROM_ARGV };

/*
 * One parse. The sources are read from the highest down (the command
 * line, the environment, the files), so set_opt keeps a value unless a
 * higher source gave one; the files come system file first, and the
 * user's beats it.
 */
struct parse {
	struct rlock_opts *o;
	enum from now;			/* the source being read */
	struct conf_at where;		/* a file's: the line being read;
					 * the environment's: the variable */
	const struct conf_at *conf;	/* set: usage_error blames this file
					 * line, with 78 */
	unsigned char from[OPT_END];	/* by option: its value's source */
	struct conf_at at[OPT_END];	/* by option: the files' last line
					 * that set it, used or not */
	int syslog;			/* the files' syslog */
	struct option longs[NOPT + 1];	/* getopt's, for a command */
	char shorts[2 * NOPT + 3];	/* line being read */
};

static const struct cli_option *
option_of(int val)
{
	const struct cli_option *r;

	for (r = cli_options; r->name && r->val != val; r++)
		continue;
	return r;
}

/*
 * getopt's tables for one command line: the options of the modes in. lead
 * "+": stop at COMMAND. ":": getopt stays silent and returns ':' for a
 * missing value, so every message is ours, one line, "rlock: " first.
 */
static void
getopt_tables(struct parse *p, const char *lead, unsigned in)
{
	const struct cli_option *r;
	struct option *lo = p->longs;
	char *s = stpcpy(p->shorts, lead);

	for (r = cli_options; r->name; r++) {
		if (!(r->in & in))
			continue;
		*lo++ = (struct option){ r->name, r->arg, NULL, r->val };
		if (r->val < 256)
			s += sprintf(s, "%c%s", r->val, r->arg ? ":" : "");
	}
	*lo = (struct option){ NULL, 0, NULL, 0 };
}

static int
given(const struct parse *p, int c)
{
	return p->from[c] == FROM_ARGV;
}

static int
from_file(enum from f)
{
	return f == FROM_SYSTEM || f == FROM_USER;
}

void
cli_usage(void)
{
	fputs(
"Usage:\n"
"  rlock [OPTIONS] -k KEY [--] COMMAND [ARG...]\n"
"  rlock [OPTIONS] -k KEY -c 'SHELL COMMAND'\n"
"  rlock status [--json | --prometheus] KEY...\n"
"  rlock list [--json] [PATTERN]\n"
"  rlock release --force KEY\n"
"  rlock lock [OPTIONS] -k KEY; ...; rlock unlock [-k KEY]\n"
"\n"
"Hold a lock in Redis for COMMAND or a script's section: flock(1) across hosts.\n"
"\n"
"Options:\n"
"  -k, --key KEY             lock name (1-512 bytes)\n"
"  -c, --command CMD         run CMD through /bin/sh -c\n"
"  -n, --nonblock            fail at once if the lock is held\n"
"  -w, --timeout DUR         wait at most DUR for the lock (default: forever)\n"
"  -l, --lease DUR           lease of the lock, renewed every DUR/3 (30s)\n"
"  -E, --conflict-exit-code N  exit status when not obtained (75)\n"
"  -N, --limit N             semaphore: at most N holders (1)\n"
"  -s, --shared              shared (read) lock: any number, never with -x\n"
"  -x, --exclusive           exclusive lock (the default)\n"
"      --fair                first come, first served among waiters\n"
"      --on-lost ACTION      term, kill or ignore when the lease is lost (term)\n"
"      --kill-after DUR      SIGTERM to SIGKILL grace on a lost lease (10s)\n"
"      --min-hold DUR        keep the lock DUR past its grant (cron fleets)\n"
"      --max-hold DUR        SIGTERM COMMAND once it held the lock DUR (124)\n"
"      --syslog              also log skips, runs and errors to syslog\n"
"      --pid PID             lock: the owner of the lock (the caller's shell)\n"
"      --export              lock: print export RLOCK_KEY=... for eval\n"
"      --redisson            KEY is a lock of Redisson (Java): getLock(KEY)\n"
"  -u, --url URL             redis://[user[:pass]@]host[:port][/db],\n"
"                            unix:///path/to/socket[?db=N],\n"
"                            redis+sentinel://host:port[,...]/NAME[/db] or\n"
"                            redis+cluster://host:port[,...]; over TLS:\n"
"                            rediss://, rediss+sentinel://, rediss+cluster://\n"
"      --redlock             hold the lock on a majority of the -u masters\n"
"      --password-file FILE  read the Redis password from FILE\n"
"      --config FILE         read FILE instead of the rlock.conf(5) files\n"
"      --connect-timeout DUR give up connecting after DUR (5s; -w if shorter)\n"
"      --prefix P            prefix of every Redis key (rlock:)\n"
"      --tls                 TLS even with redis:// URLs\n"
"      --tls-cacert FILE     CA file to verify the server (system store)\n"
"      --tls-cacertdir DIR   the same, a directory of them\n"
"      --tls-cert FILE       client certificate (mutual TLS)\n"
"      --tls-key FILE        its private key (default: in --tls-cert's file)\n"
"      --tls-sni NAME        server name sent and verified (the URL's host)\n"
"      --tls-insecure        do not verify the server (warns)\n"
"  -q, --quiet               fewer messages\n"
"  -v, --verbose             log what happens\n"
"  -h, --help                show this help\n"
"  -V, --version             show the version\n"
"\n"
"Subcommands: status, list, release, lock and unlock, as above.\n"
"DUR: a number with an optional unit ms, s, m, h (default s), at most 87840h.\n"
"Environment: RLOCK_URL, REDIS_URL, RLOCK_PASSWORD, REDISCLI_AUTH,\n"
"  RLOCK_SENTINEL_PASSWORD, RLOCK_TLS_CACERT, RLOCK_TLS_CERT, RLOCK_TLS_KEY,\n"
"  RLOCK_CONFIG; USER (or LOGNAME) names the holder when HOME is that user's.\n"
"Exit status: COMMAND's; 75 not obtained (-E); 64 usage; 69 unreachable;\n"
"  70 lease lost; 71 system failure; 76 unusable answer; 77 access refused;\n"
"  78 config file; 124 --max-hold; 126/127 not executable/found; 128+N signal N.\n"
"See rlock(1) and rlock.conf(5).\n", stdout);
}

static int usage_error(const struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
usage_error(const struct parse *p, const char *fmt, ...)
{
	char line[1024], shown[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Words from argv may hold a newline or an escape sequence. */
	printable(line, strlen(line), shown, sizeof(shown));
	if (p->conf)
		return conf_error(p->conf, "%s", shown);
	msg_err("%s", shown);
	fputs("Try 'rlock --help' for more information.\n", stderr);
	return RL_EXIT_USAGE;
}

/* A duration of at least min ms (0: any). */
static int
parse_dur_opt(const struct parse *p, const char *name, const char *arg,
    int64_t min, int64_t *out)
{
	char least[32];
	int r = dur_parse(arg, out);

	if (r == DUR_TOO_LONG)
		return usage_error(p, "%s: '%s' is too long (at most %s, about "
		    "ten years)", name, arg, DUR_MAX_TEXT);
	if (r != 0)
		return usage_error(p, "%s: invalid duration '%s' (use e.g. "
		    "500ms, 1.5, 30s, 5m, 2h)", name, arg);
	if (*out >= min)
		return 0;
	if (min == 1)
		return usage_error(p, "%s must be more than 0", name);
	dur_format(min, least, sizeof(least));
	return usage_error(p, "%s must be at least %s, not '%s'", name, least,
	    arg);
}

/*
 * The message for getopt's '?' or ':' (opterr is 0); `before` is optind
 * before that getopt_long call. getopt stays on a cluster's word until its
 * last letter, so while optind has not moved past `before`, the culprit is
 * a letter inside argv[optind] and argv[optind - 1] is an earlier, good
 * word ("--fair -Zn" is about -Z, not --fair). A long option is named by
 * its word, as typed up to any '='; a short one by optopt, since in a
 * cluster like -nZ the word is not the culprit.
 */
static int
getopt_error(const struct parse *p, int c, char **argv, int before,
    const char *mode)
{
	const char *word = optind > before ? argv[optind - 1] : "";
	int islong = strncmp(word, "--", 2) == 0, matches = 0;
	size_t len = strcspn(word, "=");
	const struct option *lo;
	char name[1024];

	if (islong)
		snprintf(name, sizeof(name), "%.*s", (int)len, word);
	else
		snprintf(name, sizeof(name), "-%c", optopt ? optopt : '?');
	for (lo = p->longs; islong && lo->name; lo++)
		matches += strncmp(lo->name, word + 2, len - 2) == 0;
	if (c == ':')
		return usage_error(p, "option '%s' needs a value", name);
	if (islong && optopt != 0)
		return usage_error(p, "option '%s' takes no value", name);
	if (matches > 1)
		return usage_error(p, "ambiguous option '%s'", name);
	return usage_error(p, "unknown option '%s'%s%s", name,
	    mode ? " for " : "", mode ? mode : "");
}

/*
 * Free a string that may hold a password (a URL or the password itself),
 * zeroed first: explicit_bzero, since the compiler may drop a memset
 * before free.
 */
static void
scrub_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* One more URL of o's; past --redlock's most, the last is replaced. */
static void
add_url(struct rlock_opts *o, const char *url)
{
	if (o->nurls == REDLOCK_MAX + 1)
		scrub_free(o->urls[--o->nurls]);
	o->urls = xrealloc(o->urls, (size_t)(o->nurls + 1) * sizeof(*o->urls));
	o->urls[o->nurls++] = xstrdup(url);
}

static void
drop_urls(struct rlock_opts *o)
{
	while (o->nurls > 0)
		scrub_free(o->urls[--o->nurls]);
}

/*
 * A copy of s that lives as long as o: a file's strings, which o's
 * pointers (prefix, TLS files) may hold.
 */
static char *
keep(struct rlock_opts *o, const char *s)
{
	o->kept = xrealloc(o->kept, (size_t)(o->nkept + 1) * sizeof(*o->kept));
	return o->kept[o->nkept++] = xstrdup(s);
}

/*
 * Where the value being read comes from, for tls.c's messages: NULL for
 * the command line, the variable, or "name (FILE:LINE)", kept.
 */
static const char *
source(struct parse *p, const char *name)
{
	char buf[600];

	if (p->now == FROM_ARGV)
		return NULL;
	if (p->now == FROM_ENV)
		return p->where.file;
	snprintf(buf, sizeof(buf), "%s (%s:%d)", name, p->where.file,
	    p->where.line);
	return keep(p->o, buf);
}

/*
 * Does the value being read replace the one o holds? Not over a higher
 * source's. The CA is one setting, tls-cacert or tls-cacertdir (or both,
 * from one source); a key goes with its certificate: none from below the
 * certificate's source, and the environment's only with the
 * environment's certificate.
 */
static int
takes(struct parse *p, int c)
{
	unsigned char *f = p->from;

	if (c == OPT_TLS_CACERT || c == OPT_TLS_CACERTDIR) {
		if (p->now < f[OPT_TLS_CACERT] || p->now < f[OPT_TLS_CACERTDIR])
			return 0;
		f[OPT_TLS_CACERT] = f[OPT_TLS_CACERTDIR] = p->now;
		return 1;
	}
	if (c == OPT_TLS_KEY && (p->now < f[OPT_TLS_CERT] ||
	    (p->now == FROM_ENV && f[OPT_TLS_CERT] != FROM_ENV)))
		return 0;
	if (p->now < f[c])
		return 0;
	f[c] = p->now;
	return 1;
}

/*
 * -u, a file's url line or $RLOCK_URL: o->urls holds the URLs of the
 * highest source, in order (every -u, every url line of the last file:
 * --redlock's masters). A file's must parse and hold no password (others
 * may read the file), used or not. -u's password is blanked in argv, so
 * ps(1) and /proc/PID/cmdline no longer show it.
 */
static int
set_url(struct parse *p, int take, int fresh, char *arg)
{
	struct rlock_opts *o = p->o;
	struct endpoint ep;
	const char *why = "";
	char from[600];
	size_t off, len;
	int pw = url_password_span(arg, &off, &len) == 0, bad = 0;

	if (p->conf && pw)
		return conf_error(p->conf, "url holds a password: it stays out "
		    "of a configuration file; put it in a file of its own and "
		    "name that with password-file");
	if (p->conf) {
		memset(&ep, 0, sizeof(ep));
		bad = url_parse(arg, &ep, &why) < 0;
		url_free(&ep);
	}
	if (bad)
		return conf_error(p->conf, "bad Redis URL '%s': %s", arg, why);
	if (!take)
		return 0;
	if (fresh)
		drop_urls(o);
	add_url(o, arg);
	o->url_from = p->now == FROM_ENV ? p->where.file : "-u";
	if (p->conf) {
		snprintf(from, sizeof(from), "url in %s:%d", p->where.file,
		    p->where.line);
		o->url_from = keep(o, from);
	}
	if (pw && p->now == FROM_ARGV)
		memset(arg + off, '*', len);
	return 0;
}

static int
read_password_file(struct rlock_opts *o, const char *path)
{
	struct stat st;
	char buf[1024], shown[256];
	FILE *f;
	size_t n;

	printable(path, strlen(path), shown, sizeof(shown));
	if ((f = fopen(path, "r")) == NULL) {
		msg_err("cannot read --password-file %s: %s", shown,
		    strerror(errno));
		return RL_EXIT_USAGE;
	}
	if (fstat(fileno(f), &st) < 0)
		st.st_mode = 0;
	if (S_ISDIR(st.st_mode)) {
		fclose(f);
		msg_err("cannot read --password-file %s: %s", shown,
		    strerror(EISDIR));
		return RL_EXIT_USAGE;
	}
	if (S_ISREG(st.st_mode) && (st.st_mode & 077))
		msg_warn("--password-file %s is accessible by others; "
		    "chmod 600 it", shown);
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	n = strcspn(buf, "\r\n");
	/* AUTH "" would only draw a WRONGPASS that points elsewhere. */
	if (n == 0) {
		msg_err("--password-file %s %s", shown, buf[0] ? "has an "
		    "empty first line (the password goes on the first line)" :
		    "is empty");
		return RL_EXIT_USAGE;
	}
	buf[n] = '\0';
	scrub_free(o->password);
	o->password = xstrdup(buf);
	o->password_from_file = 1;
	o->password_file = path;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

/*
 * --password-file reads its file at once; the files' password-file is
 * read once the URL is known (password_fallbacks), if no password beats
 * it; $RLOCK_PASSWORD and $REDISCLI_AUTH are the password itself.
 */
static int
set_password(struct parse *p, struct rlock_opts *o, char *arg)
{
	if (p->now == FROM_ARGV)
		return read_password_file(o, arg);
	if (p->now == FROM_ENV) {
		scrub_free(o->password);
		o->password = xstrdup(arg);
	} else {
		o->password_file = arg;
	}
	return 0;
}

/*
 * The connection's and TLS's options, which every mode that asks Redis
 * takes and a file may set. -1: c is not one of them.
 */
static int
conn_opt(struct parse *p, struct rlock_opts *o, int c, char *arg)
{
	struct tls_cfg *t = &o->tls;

	switch (c) {
	case OPT_REDLOCK:
		o->redlock = arg == NULL;
		return 0;
	case OPT_PASSWORD_FILE:
		return set_password(p, o, arg);
	case OPT_CONFIG:
		o->config = arg;
		return 0;
	case OPT_CONNECT_TIMEOUT:
		return parse_dur_opt(p, "--connect-timeout", arg, 1,
		    &o->connect_timeout_ms);
	case OPT_PREFIX:
		o->prefix = arg;
		if (keys_bad_prefix(arg))
			return usage_error(p, "--prefix '%s': a '{}' there "
			    "would leave every key an empty Cluster hash tag",
			    arg);
		return 0;
	case OPT_TLS:
		o->tls_forced = arg == NULL;
		return 0;
	case OPT_TLS_CACERT:
		t->cacert = arg;
		t->cacert_src = source(p, "tls-cacert");
		return 0;
	case OPT_TLS_CACERTDIR:
		t->cacertdir = arg;
		return 0;
	case OPT_TLS_CERT:
		t->cert = arg;
		t->cert_src = source(p, "tls-cert");
		return 0;
	case OPT_TLS_KEY:
		t->key = arg;
		t->key_src = source(p, "tls-key");
		return 0;
	case OPT_TLS_SNI:
		t->sni = arg;
		return 0;
	case OPT_TLS_INSECURE:
		t->insecure = 1;
		return 0;
	}
	return -1;
}

/* --on-lost's actions, by enum on_lost. */
static const char *const LOST_ACTIONS[] = { [LOST_TERM] = "term",
    [LOST_KILL] = "kill", [LOST_IGNORE] = "ignore" };

/* A holder's options (a run, rlock lock). -1: c is not one of them. */
static int
hold_opt(struct parse *p, struct rlock_opts *o, int c, char *arg)
{
	long long v;

	switch (c) {
	case 'k':
		o->key = arg;
		return 0;
	case 'n':
		o->wait_ms = 0;
		return 0;
	case 'w':
		return parse_dur_opt(p, "--timeout", arg, 0, &o->wait_ms);
	case 'l':
		return parse_dur_opt(p, "--lease", arg, LEASE_MIN_MS,
		    &o->lease_ms);
	case 'E':
		if (int_parse(arg, 0, 255, &v) < 0)
			return usage_error(p, "--conflict-exit-code: '%s' is "
			    "not a status from 0 to 255", arg);
		o->conflict_exit = (int)v;
		return 0;
	case 'N':
		if (int_parse(arg, 1, 1000000, &v) < 0)
			return usage_error(p, "--limit: '%s' is not a number "
			    "from 1 to 1000000", arg);
		o->limit = (long)v;
		return 0;
	case 's':
	case 'x':
		o->shared = c == 's';
		return 0;
	case 'c':
		o->shell_cmd = arg;
		return 0;
	case OPT_FAIR:
		o->fair = 1;
		return 0;
	case OPT_ON_LOST:
		for (v = LOST_TERM; v <= LOST_IGNORE; v++)
			if (strcmp(arg, LOST_ACTIONS[v]) == 0)
				break;
		if (v > LOST_IGNORE)
			return usage_error(p, "--on-lost: unknown action '%s' "
			    "(use term, kill or ignore)", arg);
		o->on_lost = (enum on_lost)v;
		return 0;
	case OPT_KILL_AFTER:
		return parse_dur_opt(p, "--kill-after", arg, 0,
		    &o->kill_after_ms);
	case OPT_MIN_HOLD:
		return parse_dur_opt(p, "--min-hold", arg, 0,
		    &o->min_hold_ms);
	case OPT_MAX_HOLD:
		return parse_dur_opt(p, "--max-hold", arg, 1,
		    &o->max_hold_ms);
	case OPT_SYSLOG:
		/* The files' is opened once they are read (load_conf). */
		if (p->now == FROM_ARGV)
			msg_syslog_open();
		else
			p->syslog = arg == NULL;
		return 0;
	}
	return -1;
}

/*
 * One option's value from the source being read (a flag's arg is NULL,
 * or a file's "no"): checked, and set in o if takes() says so, else
 * checked on a copy and dropped. Here: -u, then rlock lock's, the
 * messages' and the subcommands'. Returns 0, or the status after the
 * message.
 */
static int
set_opt(struct parse *p, int c, char *arg)
{
	struct rlock_opts *o = p->o, dropped;
	int fresh = p->from[c] < p->now, st;
	long long v;

	if (!takes(p, c)) {
		dropped = *o;
		o = &dropped;
	}
	switch (c) {
	case 'u':
		return set_url(p, o == p->o, fresh, arg);
	case OPT_PID:
		if (int_parse(arg, 1, INT32_MAX, &v) < 0)
			return usage_error(p, "--pid: '%s' is not a process id",
			    arg);
		o->owner = (long)v;
		return 0;
	case OPT_EXPORT:
		o->export_env = 1;
		return 0;
	case OPT_REDISSON:
		o->lmode = mode_by_name("redisson");
		return 0;
	case 'q':
	case 'v':
		msg_level = c == 'q' ? MSG_QUIET : MSG_VERBOSE;
		return 0;
	case OPT_JSON:
		o->json = 1;
		return 0;
	case OPT_PROMETHEUS:
		o->prometheus = 1;
		return 0;
	case OPT_FORCE:
		o->force = 1;
		return 0;
	case 'h':
		o->mode = MODE_HELP;
		return 0;
	case 'V':
		if (o->mode != MODE_HELP)
			o->mode = MODE_VERSION;
		return 0;
	}
	if ((st = conn_opt(p, o, c, arg)) >= 0 ||
	    (st = hold_opt(p, o, c, arg)) >= 0)
		return st;
	return usage_error(p, "unexpected option");
}

/*
 * argv's options, each set as it comes. Returns 0 at the end, or the
 * status after a usage error (said here). word: the subcommand, for the
 * messages, NULL before it. Unlock and the subcommands refuse here an
 * option that is not theirs; a run and lock once all is read
 * (finish_run), as -c and --pid may come before the word.
 */
static int
parse_opts(struct parse *p, int argc, char **argv, const char *word)
{
	struct rlock_opts *o = p->o;
	int before, c, st;

	for (;;) {
		/* 0 makes glibc start at 1: a cluster there has not moved. */
		before = optind > 0 ? optind : 1;
		if ((c = getopt_long(argc, argv, p->shorts, p->longs,
		    NULL)) == -1)
			return 0;
		if (c == '?' || c == ':')
			return getopt_error(p, c, argv, before, word);
		if (word && o->mode != MODE_HELP && o->mode != MODE_LOCK &&
		    !(option_of(c)->in & 1u << o->mode))
			return o->mode == MODE_UNLOCK ? usage_error(p,
			    "unlock takes only -k KEY") : usage_error(p,
			    "%s is not an option of this subcommand",
			    argv[optind - 1]);
		if ((st = set_opt(p, c, optarg)) != 0)
			return st;
	}
}

/*
 * The environment, read after the command line and before the files:
 * for each option the command line did not give, the first of its
 * variables that is set and not empty.
 */
static int
read_env(struct parse *p)
{
	const struct cli_option *r;
	char name[64], *v;
	const char *e;
	size_t n;
	int st;

	p->now = FROM_ENV;
	for (r = cli_options; r->name; r++) {
		if (given(p, r->val))
			continue;
		for (e = r->env; *e; e += n + (e[n] == ' ')) {
			n = strcspn(e, " ");
			snprintf(name, sizeof(name), "%.*s", (int)n, e);
			if ((v = getenv(name)) == NULL || *v == '\0')
				continue;
			p->where.file = keep(p->o, name);
			if ((st = set_opt(p, r->val, v)) != 0)
				return st;
			break;
		}
	}
	return 0;
}

/*
 * One setting of a file (conffile.c's callback), set as the command line
 * sets it: a flag stands alone or takes yes or no, any other option a
 * value. A file after the first is the user's, which beats the system's.
 */
static int
conf_opt(void *ctx, const char *name, char *value, const struct conf_at *in)
{
	struct parse *p = ctx;
	const struct cli_option *r;
	char n[128];
	int st;

	for (r = cli_options; r->name && strcmp(r->name, name) != 0; r++)
		continue;
	printable(name, strlen(name), n, sizeof(n));
	if (strcmp(name, "password") == 0 || strcmp(name, "pass") == 0)
		return conf_error(in, "'%s' is not allowed: a password stays "
		    "out of a configuration file; put it in a file of its own "
		    "and name that with password-file", n);
	if (r->name == NULL && name[0] == '-')
		return conf_error(in, "unknown name '%s' (write a long option "
		    "without its dashes)", n);
	if (r->name == NULL)
		return conf_error(in, "unknown name '%s' (see rlock.conf(5))",
		    n);
	if (*r->conf)
		return conf_error(in, "'%s' is not allowed%s", name, r->conf);
	if (r->arg == FLAG && value && strcmp(value, "yes") != 0 &&
	    strcmp(value, "no") != 0)
		return conf_error(in, "%s is a flag: '%s' alone, or '%s = yes' "
		    "or '%s = no'", name, name, name, name);
	if (r->arg == VALUE && (value == NULL || *value == '\0'))
		return conf_error(in, "%s needs a value: '%s = VALUE'", name,
		    name);
	/* The file's name outlives the call: one copy per file. */
	if (p->where.file == NULL || strcmp(p->where.file, in->file) != 0) {
		p->now = p->where.file ? FROM_USER : FROM_SYSTEM;
		p->where.file = keep(p->o, in->file);
	}
	p->where.line = in->line;
	p->at[r->val] = p->where;
	if (r->arg == FLAG)
		value = value && strcmp(value, "no") == 0 ? value : NULL;
	else
		value = keep(p->o, value);
	p->conf = &p->where;
	st = set_opt(p, r->val, value);
	p->conf = NULL;
	return st;
}

/* The files, after the command line and the environment. */
static int
load_conf(struct parse *p)
{
	int st;

	p->where.file = NULL;
	if ((st = conf_load(p->o->config, p->from[OPT_CONFIG] == FROM_ENV ?
	    "RLOCK_CONFIG" : "--config", conf_opt, p)) != 0)
		return st;
	if (p->at[OPT_TLS_KEY].file && !p->at[OPT_TLS_CERT].file)
		return conf_error(&p->at[OPT_TLS_KEY], "tls-key without "
		    "tls-cert: name the certificate too");
	if (p->syslog && (IN_HOLD & 1u << p->o->mode))
		msg_syslog_open();
	return 0;
}

static void
set_defaults(struct rlock_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = MODE_RUN;
	o->lmode = &mode_rlock;
	o->wait_ms = -1;
	o->lease_ms = 30 * 1000;
	o->conflict_exit = RL_EXIT_NOT_OBTAINED;
	o->limit = 1;
	o->on_lost = LOST_TERM;
	o->kill_after_ms = 10 * 1000;
	o->connect_timeout_ms = 5 * 1000;
	o->prefix = "rlock:";
}

static int
parse_subcommand(struct parse *p, int argc, char **argv)
{
	struct rlock_opts *o = p->o;
	char shown[96];
	size_t len;
	int st, i;

	/*
	 * argv here starts at the subcommand word. 0, not 1: glibc then sets
	 * itself up afresh from the short options, in GNU order, so options
	 * may follow the keys ("status K --json"); with 1 it would keep the
	 * run mode's "+" and take "--json" for a KEY.
	 */
	optind = 0;
	getopt_tables(p, ":", IN_SUBS);
	if ((st = parse_opts(p, argc, argv, argv[0])) != 0)
		return st;
	o->args = argv + optind;
	o->nargs = argc - optind;
	if (o->mode == MODE_HELP)
		return 0;
	if (o->mode == MODE_STATUS && o->nargs == 0)
		return usage_error(p, "status: give at least one KEY");
	if (o->json && o->prometheus)
		return usage_error(p, "status: --json and --prometheus do not "
		    "go together");
	if (o->mode == MODE_LIST && o->nargs > 1)
		return usage_error(p, "list takes at most one PATTERN");
	if (o->mode == MODE_RELEASE && !o->force)
		return usage_error(p, "release breaks a lock someone else "
		    "holds: say so with --force");
	if (o->mode == MODE_RELEASE && o->nargs != 1)
		return usage_error(p, "release --force takes exactly one KEY");
	/* Each KEY or PATTERN, shown cut short: it may be kilobytes long. */
	for (i = 0; i < o->nargs; i++) {
		len = strlen(o->args[i]);
		printable(o->args[i], len, shown, sizeof(shown));
		if (o->mode == MODE_LIST && !glob_valid(o->args[i], len))
			return usage_error(p, "list: bad PATTERN '%s': a '[' "
			    "without its ']', or a '\\' at the end", shown);
		if (o->mode != MODE_LIST && (len == 0 || len > KEY_MAX_LEN))
			return usage_error(p, "bad KEY '%s': %s", shown,
			    len == 0 ? "empty" : "longer than 512 bytes");
	}
	return 0;
}

static int
finish_run(struct parse *p, int argc, char **argv)
{
	struct rlock_opts *o = p->o;
	size_t klen = o->key ? strlen(o->key) : 1;	/* unlock: none */

	if (klen == 0)
		return usage_error(p, "the key is empty");
	if (klen > KEY_MAX_LEN)
		return usage_error(p, "the key is longer than 512 bytes");
	o->cmd = argv + optind;
	if (o->mode != MODE_RUN && (o->shell_cmd || optind < argc))
		return usage_error(p, "%s takes no command (found '%s')",
		    argv[0], o->shell_cmd ? "-c" : argv[optind]);
	if (o->mode == MODE_RUN && (given(p, OPT_PID) ||
	    given(p, OPT_EXPORT)))
		return usage_error(p, "--pid and --export go with 'rlock "
		    "lock'");
	if (o->shell_cmd && optind < argc)
		return usage_error(p, "-c takes the whole shell command; "
		    "nothing may follow it (found '%s')", argv[optind]);
	if (!o->shell_cmd && optind >= argc && o->mode == MODE_RUN)
		return usage_error(p, "missing command to run under the lock");
	/* Shared holders are not counted: -N would mean a semaphore of
	 * readers, which is a semaphore. */
	if (o->shared && given(p, 'N'))
		return usage_error(p, "--shared does not go with --limit: "
		    "shared holders are not counted (use one or the other)");
	/* As in flock(1): --nonblock wins over --timeout, whichever came
	 * first; the order of two options must not decide whether a cron
	 * line waits. */
	if (given(p, 'n')) {
		if (given(p, 'w'))
			msg_verbose("--timeout has no effect with --nonblock");
		o->wait_ms = 0;
	}
	if (o->fair && o->wait_ms == 0)
		msg_verbose("--fair has no effect with --nonblock");
	return 0;
}

/* lock: the run mode's options, without COMMAND; unlock: -k only. */
static int
parse_section(struct parse *p, int argc, char **argv)
{
	struct rlock_opts *o = p->o;
	int st;

	optind = 0;
	if ((st = parse_opts(p, argc, argv, argv[0])) != 0 ||
	    o->mode == MODE_HELP || o->mode == MODE_VERSION)
		return st;
	if (o->key == NULL && o->mode == MODE_LOCK)
		return usage_error(p, "lock: missing -k KEY");
	return finish_run(p, argc, argv);
}

static int
select_mode(struct parse *p, int argc, char **argv)
{
	struct rlock_opts *o = p->o;
	const char *word = argv[optind];
	const struct cli_option *r;

	o->mode = strcmp(word, "lock") == 0 ? MODE_LOCK :
	    strcmp(word, "unlock") == 0 ? MODE_UNLOCK : MODE_RUN;
	if (o->mode != MODE_RUN)
		return parse_section(p, argc - optind, argv + optind);
	if (strcmp(word, "status") == 0)
		o->mode = MODE_STATUS;
	else if (strcmp(word, "list") == 0)
		o->mode = MODE_LIST;
	else if (strcmp(word, "release") == 0)
		o->mode = MODE_RELEASE;
	else
		return usage_error(p, "missing -k KEY before the command '%s' "
		    "(or use a subcommand: status, list, release, lock, "
		    "unlock)", word);
	for (r = cli_options; r->name; r++)
		if (given(p, r->val) && !(r->in & IN_SUBS))
			return usage_error(p, "options of the run mode do not "
			    "go with '%s'", word);
	return parse_subcommand(p, argc - optind, argv + optind);
}

/*
 * A URL that cannot parse is a usage error like any other: said here,
 * with the Try line, before any mode contacts Redis. The password is
 * blanked in the message as it is in argv.
 */
static int
check_url(struct parse *p, const char *url, const char *from)
{
	struct rlock_opts *o = p->o;
	struct endpoint ep;
	const char *why = "";
	size_t off, len;
	char *shown;
	int st;

	memset(&ep, 0, sizeof(ep));
	if (url_parse(url, &ep, &why) < 0) {
		shown = xstrdup(url);
		if (url_password_span(shown, &off, &len) == 0)
			memset(shown + off, '*', len);
		st = usage_error(p, "bad Redis URL '%s' (%s): %s", shown, from,
		    why);
		free(shown);
		url_free(&ep);
		return st;
	}
	if (ep.tls)
		o->tls.on = 1;
	/* Kept for config_lock, which needs not parse it again. */
	o->eps = xrealloc(o->eps, (size_t)(o->neps + 1) * sizeof(*o->eps));
	o->eps[o->neps++] = ep;
	return 0;
}

/* $RLOCK_URL (or $REDIS_URL) with --redlock: a master per word. */
static void
split_urls(struct rlock_opts *o)
{
	char *all = o->urls[0], *tok, *save = NULL;
	size_t n = strlen(all);

	o->nurls = 0;
	for (tok = strtok_r(all, " \t\n", &save); tok; tok = strtok_r(NULL,
	    " \t\n", &save))
		add_url(o, tok);
	/* strtok_r cut it with NULs: zero its whole length. */
	explicit_bzero(all, n);
	free(all);
}

/*
 * --redlock: an odd number of masters, so a majority is a clear quorum;
 * at: the files' url line, when they came from there. A lock of one
 * holder on plain masters.
 */
static int
redlock_rules(struct parse *p, const struct conf_at *at)
{
	struct rlock_opts *o = p->o;
	char where[600] = "";
	int st;

	if (o->nurls >= 3 && o->nurls % 2 == 1 && o->nurls <= REDLOCK_MAX) {
		if (o->fair || o->limit > 1)
			return usage_error(p, "%s does not go with --redlock",
			    o->fair ? "--fair" : "--limit");
		if (o->shared)
			return usage_error(p, "--shared does not go with "
			    "--redlock: a shared lock is held on one server "
			    "(or behind Sentinel or Cluster)");
		return 0;
	}
	if (!given(p, OPT_REDLOCK) && p->at[OPT_REDLOCK].file)
		snprintf(where, sizeof(where), "; redlock is set in %s:%d",
		    p->at[OPT_REDLOCK].file, p->at[OPT_REDLOCK].line);
	/* The files' URLs are the files' to fix. */
	p->conf = at;
	st = usage_error(p, "--redlock needs an odd number of independent "
	    "masters, 3 to %d (got %d%s)%s", REDLOCK_MAX, o->nurls,
	    o->nurls > REDLOCK_MAX ? " or more" : "", where);
	p->conf = NULL;
	return st;
}

/*
 * A file a setting names, checked when it is used, so the message names
 * the setting's FILE:LINE: readable, and a directory only for
 * tls-cacertdir.
 */
static int
conf_readable(const char *name, const char *path, const struct conf_at *at,
    int want_dir)
{
	struct stat st;
	char shown[512];

	printable(path, strlen(path), shown, sizeof(shown));
	if (access(path, R_OK) < 0)
		return conf_error(at, "cannot read %s %s: %s", name, shown,
		    strerror(errno));
	if (stat(path, &st) == 0 && (S_ISDIR(st.st_mode) ? 1 : 0) == want_dir)
		return 0;
	return conf_error(at, "cannot read %s %s: %s", name, shown,
	    strerror(want_dir ? ENOTDIR : EISDIR));
}

/*
 * The files' TLS files, where used, are checked when TLS is on (tls_setup
 * reads them only then), here, so that the message names their line.
 */
static int
tls_files(struct parse *p)
{
	static const int opt[] = { OPT_TLS_CACERT, OPT_TLS_CACERTDIR,
	    OPT_TLS_CERT, OPT_TLS_KEY };
	struct rlock_opts *o = p->o;
	struct tls_cfg *t = &o->tls;
	const char *path[] = { t->cacert, t->cacertdir, t->cert, t->key };
	size_t i;
	int st;

	for (i = 0; i < 4 && (t->on || o->tls_forced); i++)
		if (path[i] && from_file(p->from[opt[i]]) &&
		    (st = conf_readable(option_of(opt[i])->name, path[i],
		    &p->at[opt[i]], opt[i] == OPT_TLS_CACERTDIR)) != 0)
			return st;
	if (t->sni && *t->sni == '\0')
		return usage_error(p, "--tls-sni needs a name");
	if (o->tls_forced)
		t->on = 1;
	if (!t->on && (t->cacert || t->cacertdir || t->cert || t->sni ||
	    t->insecure))
		msg_verbose("no TLS (no --tls, no rediss:// URL): the TLS "
		    "options are not used");
	return 0;
}

/*
 * The password: --password-file, else $RLOCK_PASSWORD or $REDISCLI_AUTH,
 * else a password in the URL (config.c), else the files' password-file,
 * read by the command line's own code.
 */
static int
password_fallbacks(struct parse *p)
{
	struct rlock_opts *o = p->o;
	int i, st;

	if (!from_file(p->from[OPT_PASSWORD_FILE]))
		return 0;
	/* The URLs in use (with --redlock, any): a password beats it. */
	for (i = 0; i < o->neps; i++)
		if (o->eps[i].pass && *o->eps[i].pass)
			return 0;
	if ((st = conf_readable("password-file", o->password_file,
	    &p->at[OPT_PASSWORD_FILE], 0)) != 0)
		return st;
	return read_password_file(o, o->password_file);
}

/*
 * The URL: the last -u, else $RLOCK_URL or $REDIS_URL, else the files'
 * last url line, else the default. --redlock's masters are every URL of
 * that source ($RLOCK_URL split at blanks), plain redis://, rediss:// or
 * unix:// each.
 */
static int
url_fallbacks(struct parse *p)
{
	struct rlock_opts *o = p->o;
	const struct conf_at *at = NULL;
	int i, st = 0;

	if (o->redlock && p->from['u'] == FROM_DEFAULT)
		return usage_error(p, "--redlock needs the URLs of its "
		    "masters: -u URL for each (or RLOCK_URL='URL URL URL')");
	if (o->nurls == 0)
		add_url(o, "redis://127.0.0.1:6379/0");
	if (from_file(p->from['u']))
		at = &p->at['u'];
	if (o->redlock && p->from['u'] == FROM_ENV)
		split_urls(o);
	if (o->redlock && (st = redlock_rules(p, at)) != 0)
		return st;
	p->conf = at;
	/* With --redlock, check_url parses o->urls[i] into o->eps[i]. */
	for (i = o->redlock ? 0 : o->nurls - 1; i < o->nurls && !st; i++) {
		st = check_url(p, o->urls[i], o->url_from ? o->url_from : "-u");
		if (!st && o->redlock && o->eps[i].kind != EP_TCP &&
		    o->eps[i].kind != EP_UNIX)
			st = usage_error(p, "--redlock takes one redis://, "
			    "rediss:// or unix:// URL per master (URL %d is "
			    "not)", i + 1);
	}
	p->conf = NULL;
	return st ? st : password_fallbacks(p);
}

/* The run options the lock's mode (mode.h) does not take. */
static int
mode_check(struct parse *p)
{
	const struct rlock_opts *o = p->o;
	const struct lock_mode *m = o->lmode;
	const char *opt = NULL;

	if ((m->refuses & MODE_NO_LIMIT) && given(p, 'N'))
		opt = "--limit";
	else if ((m->refuses & MODE_NO_SHARED) && o->shared)
		opt = "--shared";
	else if ((m->refuses & MODE_NO_MIN_HOLD) && given(p, OPT_MIN_HOLD))
		opt = "--min-hold";
	else if ((m->refuses & MODE_NO_REDLOCK) && o->redlock)
		opt = "--redlock";
	if (opt == NULL)
		return 0;
	return usage_error(p, "%s does not go with --%s: %s", opt, m->name,
	    m->refused_why);
}

int
cli_parse(int argc, char **argv, struct rlock_opts *o)
{
	struct parse p;
	int st;

	set_defaults(o);
	memset(&p, 0, sizeof(p));
	p.o = o;
	p.now = FROM_ARGV;
	opterr = 0;
	getopt_tables(&p, "+:", IN_HOLD | IN(UNLOCK));
	if ((st = parse_opts(&p, argc, argv, NULL)) != 0 ||
	    o->mode == MODE_HELP || o->mode == MODE_VERSION)
		return st;
	if (o->key == NULL) {
		if (optind >= argc)
			return usage_error(&p, "missing -k KEY and command");
		if ((st = select_mode(&p, argc, argv)) != 0)
			return st;
	} else if ((st = finish_run(&p, argc, argv)) != 0) {
		return st;
	}
	if (o->mode == MODE_HELP || o->mode == MODE_UNLOCK)
		return 0;	/* "status --help"; unlock asks no server */
	if ((st = read_env(&p)) != 0 || (st = load_conf(&p)) != 0 ||
	    (st = mode_check(&p)) != 0 || (st = url_fallbacks(&p)) != 0)
		return st;
	return tls_files(&p);
}

void
cli_free(struct rlock_opts *o)
{
	int i;

	drop_urls(o);
	free(o->urls);
	for (i = 0; i < o->neps; i++)
		url_free(&o->eps[i]);
	free(o->eps);
	scrub_free(o->password);
	for (i = 0; i < o->nkept; i++)
		free(o->kept[i]);
	free(o->kept);
}

/*
 * A 100 KB argv would otherwise be stored in Redis with every grant and
 * printed whole by status. The cut does not split a UTF-8 sequence.
 */
static void
cut_command_line(char *s)
{
	size_t n = strlen(s);

	if (n <= CMDLINE_MAX)
		return;
	n = CMDLINE_MAX - 3;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(s + n, "...", 4);
}

/* A section's owner's, from /proc: its arguments, blank-separated. */
static char *
owner_command_line(long pid)
{
	char *s = xmalloc(CMDLINE_MAX + 2), path[40];
	ssize_t n = 0, i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, s, CMDLINE_MAX + 1);
		close(fd);
	}
	for (i = 0; i < n; i++)
		s[i] = s[i] ? s[i] : ' ';
	s[n > 0 ? n - (s[n - 1] == ' ') : 0] = '\0';
	cut_command_line(s);
	return s;
}

char *
cli_command_line(const struct rlock_opts *o)
{
	size_t len = 0, i;
	char *s, *p;

	if (o->mode == MODE_LOCK)
		return owner_command_line(o->owner);
	if (o->shell_cmd) {
		s = xstrdup(o->shell_cmd);
		cut_command_line(s);
		return s;
	}
	for (i = 0; o->cmd[i]; i++)
		len += strlen(o->cmd[i]) + 1;
	s = p = xmalloc(len + 1);
	for (i = 0; o->cmd[i]; i++) {
		p = stpcpy(p, o->cmd[i]);
		*p++ = ' ';
	}
	if (p > s)
		p--;
	*p = '\0';
	cut_command_line(s);
	return s;
}
