// SPDX-License-Identifier: MIT
/*
 * Command-line and environment parsing. The first getopt pass stops at the
 * first non-option ("+"): before -k that word may be a subcommand, after
 * -k it is COMMAND, passed on untouched. Usage errors are reported here,
 * before anything contacts Redis.
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

/* Which options the command line gave: a file's setting does not
 * override them. */
static unsigned char given[OPT_END];

/* While a file's setting is checked: where it was read. usage_error then
 * names FILE:LINE and returns 78. */
static const struct conf_at *conf_at;

/*
 * The files' settings that the environment beats (RLOCK_URL, REDIS_URL,
 * RLOCK_PASSWORD, RLOCK_TLS_*): held here until the environment has had
 * its turn. The strings are in o->kept.
 */
static struct {
	char **urls;		/* the last file's url lines */
	int nurls;
	struct conf_at url_at;	/* the last url line */
	const char *password_file, *cacert, *cacertdir, *cert, *key;
	struct conf_at pf_at, cacert_at, cacertdir_at, cert_at, key_at;
	struct conf_at redlock_at;
	int syslog;
	const char *file;	/* the file being read, kept */
} late;


/*
 * "+": stop at COMMAND. ":": getopt stays silent and returns ':' for a
 * missing value, so every message is ours, one line, "rlock: " first.
 */
static const char RUN_SHORT[] = "+:k:nw:l:E:N:sxc:u:qvhV";

static const struct option RUN_LONG[] = {
	{ "key", required_argument, NULL, 'k' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "lease", required_argument, NULL, 'l' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "limit", required_argument, NULL, 'N' },
	{ "shared", no_argument, NULL, 's' },
	{ "exclusive", no_argument, NULL, 'x' },
	{ "command", required_argument, NULL, 'c' },
	{ "fair", no_argument, NULL, OPT_FAIR },
	{ "on-lost", required_argument, NULL, OPT_ON_LOST },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "min-hold", required_argument, NULL, OPT_MIN_HOLD },
	{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
	{ "syslog", no_argument, NULL, OPT_SYSLOG },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "export", no_argument, NULL, OPT_EXPORT },
	{ "redisson", no_argument, NULL, OPT_REDISSON },
	{ "url", required_argument, NULL, 'u' },
	{ "redlock", no_argument, NULL, OPT_REDLOCK },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "prefix", required_argument, NULL, OPT_PREFIX },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "tls-cacert", required_argument, NULL, OPT_TLS_CACERT },
	{ "tls-cacertdir", required_argument, NULL, OPT_TLS_CACERTDIR },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-sni", required_argument, NULL, OPT_TLS_SNI },
	{ "tls-insecure", no_argument, NULL, OPT_TLS_INSECURE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* After a subcommand word: connection options plus --json / --force. */
static const char SUB_SHORT[] = ":u:qvh";

static const struct option SUB_LONG[] = {
	{ "url", required_argument, NULL, 'u' },
	{ "redlock", no_argument, NULL, OPT_REDLOCK },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "prefix", required_argument, NULL, OPT_PREFIX },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "tls-cacert", required_argument, NULL, OPT_TLS_CACERT },
	{ "tls-cacertdir", required_argument, NULL, OPT_TLS_CACERTDIR },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-sni", required_argument, NULL, OPT_TLS_SNI },
	{ "tls-insecure", no_argument, NULL, OPT_TLS_INSECURE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "redisson", no_argument, NULL, OPT_REDISSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

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

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
	char line[1024], shown[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Words from argv may hold a newline or an escape sequence. */
	printable(line, strlen(line), shown, sizeof(shown));
	if (conf_at)
		return conf_error(conf_at, "%s", shown);
	msg_err("%s", shown);
	fputs("Try 'rlock --help' for more information.\n", stderr);
	return RL_EXIT_USAGE;
}

static int
parse_dur_opt(const char *name, const char *arg, int64_t *out)
{
	int r = dur_parse(arg, out);

	if (r == 0)
		return 0;
	if (r == DUR_TOO_LONG)
		return usage_error("%s: '%s' is too long (at most %s, about ten "
		    "years)", name, arg, DUR_MAX_TEXT);
	return usage_error("%s: invalid duration '%s' (use e.g. 500ms, 1.5, "
	    "30s, 5m, 2h)", name, arg);
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
getopt_error(int c, char **argv, int before, const struct option *longopts,
    const char *mode)
{
	const char *word = optind > before ? argv[optind - 1] : "";
	const struct option *lo;
	int len, matches = 0;

	if (strncmp(word, "--", 2) != 0) {
		if (c == ':')
			return usage_error("option '-%c' needs a value", optopt);
		return usage_error("unknown option '-%c'%s%s",
		    optopt ? optopt : '?', mode ? " for " : "",
		    mode ? mode : "");
	}
	len = (int)strcspn(word, "=");
	if (c == ':')
		return usage_error("option '%.*s' needs a value", len, word);
	if (optopt != 0)
		return usage_error("option '%.*s' takes no value", len, word);
	for (lo = longopts; lo->name; lo++)
		if (strncmp(lo->name, word + 2, (size_t)len - 2) == 0)
			matches++;
	if (matches > 1)
		return usage_error("ambiguous option '%.*s'", len, word);
	return usage_error("unknown option '%.*s'%s%s", len, word,
	    mode ? " for " : "", mode ? mode : "");
}

/*
 * The next option of argv from getopt_long, marked given; -1 at the end,
 * and -1 with *status set after a usage error (said here). mode: the
 * subcommand, for the message.
 */
static int
next_opt(int argc, char **argv, const char *shortopts,
    const struct option *longopts, const char *mode, int *status)
{
	/* 0 makes glibc start at 1: a cluster there has not moved. */
	int before = optind > 0 ? optind : 1;
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	*status = 0;
	if (c == '?' || c == ':') {
		*status = getopt_error(c, argv, before, longopts, mode);
		return -1;
	}
	if (c > 0 && c < OPT_END)
		given[c] = 1;
	return c;
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

/*
 * Keep a copy of URL for ourselves and overwrite the password in argv, so
 * ps(1) and /proc/PID/cmdline no longer show it.
 */
static void
take_url(struct rlock_opts *o, char *arg)
{
	size_t off, len;

	scrub_free(o->url);
	o->url = xstrdup(arg);
	if (o->nurls < REDLOCK_MAX + 1) {
		o->urls = xrealloc(o->urls, (size_t)(o->nurls + 1) *
		    sizeof(*o->urls));
		o->urls[o->nurls++] = xstrdup(arg);
	}
	if (url_password_span(arg, &off, &len) == 0)
		memset(arg + off, '*', len);
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

/* --tls and its files. Returns 1 if c was not one of them. */
static int
tls_opt(struct rlock_opts *o, int c)
{
	switch (c) {
	case OPT_TLS:
		o->tls_forced = 1;
		return 0;
	case OPT_TLS_CACERT:
		o->tls.cacert = optarg;
		return 0;
	case OPT_TLS_CACERTDIR:
		o->tls.cacertdir = optarg;
		return 0;
	case OPT_TLS_CERT:
		o->tls.cert = optarg;
		return 0;
	case OPT_TLS_KEY:
		o->tls.key = optarg;
		return 0;
	case OPT_TLS_SNI:
		o->tls.sni = optarg;
		return 0;
	case OPT_TLS_INSECURE:
		o->tls.insecure = 1;
		return 0;
	}
	return 1;
}

/* Options common to every mode. Returns 1 if c was not one of them. */
static int
common_opt(struct rlock_opts *o, int c, int *status)
{
	*status = 0;
	if (tls_opt(o, c) == 0)
		return 0;
	switch (c) {
	case 'u':
		take_url(o, optarg);
		return 0;
	case OPT_REDLOCK:
		o->redlock = 1;
		return 0;
	case OPT_PASSWORD_FILE:
		*status = read_password_file(o, optarg);
		return 0;
	case OPT_CONFIG:
		o->config = optarg;
		return 0;
	case OPT_CONNECT_TIMEOUT:
		*status = parse_dur_opt("--connect-timeout", optarg,
		    &o->connect_timeout_ms);
		if (*status == 0 && o->connect_timeout_ms == 0)
			*status = usage_error("--connect-timeout must be more "
			    "than 0");
		return 0;
	case OPT_PREFIX:
		o->prefix = optarg;
		if (keys_bad_prefix(optarg))
			*status = usage_error("--prefix '%s': a '{}' there would "
			    "leave every key an empty Cluster hash tag", optarg);
		return 0;
	case 'q':
		msg_level = MSG_QUIET;
		return 0;
	case 'v':
		msg_level = MSG_VERBOSE;
		return 0;
	case 'h':
		o->mode = MODE_HELP;
		return 0;
	}
	return 1;
}

static int
parse_on_lost(struct rlock_opts *o, const char *arg)
{
	if (strcmp(arg, "term") == 0)
		o->on_lost = LOST_TERM;
	else if (strcmp(arg, "kill") == 0)
		o->on_lost = LOST_KILL;
	else if (strcmp(arg, "ignore") == 0)
		o->on_lost = LOST_IGNORE;
	else
		return usage_error("--on-lost: unknown action '%s' (use term, "
		    "kill or ignore)", arg);
	return 0;
}

/* One run-mode option; *run_only is set for those subcommands refuse. */
static int
run_opt(struct rlock_opts *o, int c, int *run_only)
{
	long long v;
	int st;

	*run_only = 1;
	switch (c) {
	case 'k':
		o->key = optarg;
		return 0;
	case 'n':
		o->wait_ms = 0;
		return 0;
	case 'w':
		return parse_dur_opt("--timeout", optarg, &o->wait_ms);
	case 'l':
		if ((st = parse_dur_opt("--lease", optarg, &o->lease_ms)))
			return st;
		if (o->lease_ms < LEASE_MIN_MS)
			return usage_error("--lease must be at least 100ms, "
			    "not '%s'", optarg);
		return 0;
	case 'E':
		if (int_parse(optarg, 0, 255, &v) < 0)
			return usage_error("--conflict-exit-code: '%s' is not "
			    "a status from 0 to 255", optarg);
		o->conflict_exit = (int)v;
		return 0;
	case 'N':
		if (int_parse(optarg, 1, 1000000, &v) < 0)
			return usage_error("--limit: '%s' is not a number "
			    "from 1 to 1000000", optarg);
		o->limit = (long)v;
		return 0;
	case 's':
	case 'x':
		o->shared = c == 's';
		return 0;
	case 'c':
		o->shell_cmd = optarg;
		return 0;
	case OPT_FAIR:
		o->fair = 1;
		return 0;
	case OPT_ON_LOST:
		return parse_on_lost(o, optarg);
	case OPT_KILL_AFTER:
		return parse_dur_opt("--kill-after", optarg,
		    &o->kill_after_ms);
	case OPT_MIN_HOLD:
		return parse_dur_opt("--min-hold", optarg, &o->min_hold_ms);
	case OPT_MAX_HOLD:
		if ((st = parse_dur_opt("--max-hold", optarg,
		    &o->max_hold_ms)))
			return st;
		if (o->max_hold_ms == 0)
			return usage_error("--max-hold must be more than 0");
		return 0;
	case OPT_SYSLOG:
		msg_syslog_open();
		return 0;
	case OPT_PID:
		if (int_parse(optarg, 1, INT32_MAX, &v) < 0)
			return usage_error("--pid: '%s' is not a process id",
			    optarg);
		o->owner = (long)v;
		return 0;
	case OPT_EXPORT:
		o->export_env = 1;
		return 0;
	case OPT_REDISSON:
		o->lmode = mode_by_name("redisson");
		return 0;
	case 'V':
		*run_only = 0;
		if (o->mode != MODE_HELP)
			o->mode = MODE_VERSION;
		return 0;
	}
	*run_only = 0;
	if (common_opt(o, c, &st) == 0)
		return st;
	return usage_error("unexpected option");
}

static void
set_defaults(struct rlock_opts *o)
{
	memset(o, 0, sizeof(*o));
	memset(given, 0, sizeof(given));
	memset(&late, 0, sizeof(late));
	conf_at = NULL;
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
parse_subcommand(int argc, char **argv, struct rlock_opts *o)
{
	int c, st;

	/*
	 * argv here starts at the subcommand word. 0, not 1: glibc then sets
	 * itself up afresh from SUB_SHORT, in GNU order, so options may
	 * follow the keys ("status K --json"); with 1 it would keep the
	 * run mode's "+" and take "--json" for a KEY.
	 */
	optind = 0;
	while ((c = next_opt(argc, argv, SUB_SHORT, SUB_LONG, argv[0],
	    &st)) != -1) {
		if (c == OPT_JSON && o->mode != MODE_RELEASE)
			o->json = 1;
		else if (c == OPT_PROMETHEUS && o->mode == MODE_STATUS)
			o->prometheus = 1;
		else if (c == OPT_FORCE && o->mode == MODE_RELEASE)
			o->force = 1;
		else if (c == OPT_REDISSON && o->mode != MODE_LIST)
			o->lmode = mode_by_name("redisson");
		else if (c == OPT_JSON || c == OPT_FORCE ||
		    c == OPT_PROMETHEUS || c == OPT_REDISSON)
			return usage_error("%s is not an option of this "
			    "subcommand", argv[optind - 1]);
		else if (common_opt(o, c, &st) == 0 && st)
			return st;
	}
	if (st)
		return st;
	o->args = argv + optind;
	o->nargs = argc - optind;
	if (o->mode == MODE_HELP)
		return 0;
	if (o->mode == MODE_STATUS && o->nargs == 0)
		return usage_error("status: give at least one KEY");
	if (o->json && o->prometheus)
		return usage_error("status: --json and --prometheus do not go "
		    "together");
	if (o->mode == MODE_LIST && o->nargs > 1)
		return usage_error("list takes at most one PATTERN");
	if (o->mode == MODE_RELEASE && !o->force)
		return usage_error("release breaks a lock someone else holds: "
		    "say so with --force");
	if (o->mode == MODE_RELEASE && o->nargs != 1)
		return usage_error("release --force takes exactly one KEY");
	return 0;
}

static int finish_run(int argc, char **argv, struct rlock_opts *o);

/* lock: the run mode's options, without COMMAND; unlock: -k only. */
static int
parse_section(int argc, char **argv, struct rlock_opts *o)
{
	int c, st, run_only;

	optind = 0;
	while ((c = next_opt(argc, argv, RUN_SHORT, RUN_LONG, argv[0],
	    &st)) != -1) {
		if (o->mode == MODE_UNLOCK && (c > 'z' || !strchr("kqvh", c)))
			return usage_error("unlock takes only -k KEY");
		if ((st = run_opt(o, c, &run_only)) != 0)
			return st;
	}
	if (st != 0 || o->mode == MODE_HELP || o->mode == MODE_VERSION)
		return st;
	if (o->key == NULL && o->mode == MODE_LOCK)
		return usage_error("lock: missing -k KEY");
	return finish_run(argc, argv, o);
}

static int
select_mode(int argc, char **argv, struct rlock_opts *o, int run_only)
{
	const char *word = argv[optind];

	o->mode = strcmp(word, "lock") == 0 ? MODE_LOCK :
	    strcmp(word, "unlock") == 0 ? MODE_UNLOCK : MODE_RUN;
	if (o->mode != MODE_RUN)
		return parse_section(argc - optind, argv + optind, o);
	if (strcmp(word, "status") == 0)
		o->mode = MODE_STATUS;
	else if (strcmp(word, "list") == 0)
		o->mode = MODE_LIST;
	else if (strcmp(word, "release") == 0)
		o->mode = MODE_RELEASE;
	else
		return usage_error("missing -k KEY before the command '%s' (or "
		    "use a subcommand: status, list, release, lock, unlock)",
		    word);
	if (run_only)
		return usage_error("options of the run mode do not go with "
		    "'%s'", word);
	return parse_subcommand(argc - optind, argv + optind, o);
}

static int
finish_run(int argc, char **argv, struct rlock_opts *o)
{
	size_t klen = o->key ? strlen(o->key) : 1;	/* unlock: none */

	if (klen == 0)
		return usage_error("the key is empty");
	if (klen > KEY_MAX_LEN)
		return usage_error("the key is longer than 512 bytes");
	o->cmd = argv + optind;
	if (o->mode != MODE_RUN && (o->shell_cmd || optind < argc))
		return usage_error("%s takes no command (found '%s')",
		    argv[0], o->shell_cmd ? "-c" : argv[optind]);
	if (o->mode == MODE_RUN && (given[OPT_PID] || given[OPT_EXPORT]))
		return usage_error("--pid and --export go with 'rlock lock'");
	if (o->shell_cmd && optind < argc)
		return usage_error("-c takes the whole shell command; nothing "
		    "may follow it (found '%s')", argv[optind]);
	if (!o->shell_cmd && optind >= argc && o->mode == MODE_RUN)
		return usage_error("missing command to run under the lock");
	/* Shared holders are not counted: -N would mean a semaphore of
	 * readers, which is a semaphore. */
	if (o->shared && given['N'])
		return usage_error("--shared does not go with --limit: shared "
		    "holders are not counted (use one or the other)");
	/* As in flock(1): --nonblock wins over --timeout, whichever came
	 * first; the order of two options must not decide whether a cron
	 * line waits. */
	if (given['n']) {
		if (given['w'])
			msg_verbose("--timeout has no effect with --nonblock");
		o->wait_ms = 0;
	}
	if (o->fair && o->wait_ms == 0)
		msg_verbose("--fair has no effect with --nonblock");
	return 0;
}

/*
 * A URL that cannot parse is a usage error like any other: said here,
 * with the Try line, before any mode contacts Redis. The password is
 * blanked in the message as it is in argv.
 */
static int
check_url(struct rlock_opts *o, const char *from)
{
	struct endpoint ep;
	const char *why = "";
	size_t off, len;
	char *shown;
	int st;

	memset(&ep, 0, sizeof(ep));
	if (url_parse(o->url, &ep, &why) < 0) {
		shown = xstrdup(o->url);
		if (url_password_span(shown, &off, &len) == 0)
			memset(shown + off, '*', len);
		st = usage_error("bad Redis URL '%s' (%s): %s", shown, from,
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

/* "url in FILE:LINE": where the files' URL came from, for messages. */
static const char *
conf_url_from(struct rlock_opts *o)
{
	char buf[600];

	snprintf(buf, sizeof(buf), "url in %s:%d", late.url_at.file,
	    late.url_at.line);
	return keep(o, buf);
}

/* --redlock's masters from every -u, or the environment, or the files. */
static int
redlock_sources(struct rlock_opts *o, const char **from,
    const struct conf_at **at)
{
	const char *u = getenv("RLOCK_URL");
	char *copy, *tok, *save = NULL;
	size_t n;
	int i;

	*from = "-u";
	*at = NULL;
	if (o->nurls > 0)
		return 0;
	if (u == NULL || *u == '\0')
		u = getenv("REDIS_URL"), *from = "REDIS_URL";
	else
		*from = "RLOCK_URL";
	if ((u == NULL || *u == '\0') && late.nurls > 0) {
		o->urls = xcalloc((size_t)late.nurls, sizeof(*o->urls));
		for (i = 0; i < late.nurls; i++)
			o->urls[o->nurls++] = xstrdup(late.urls[i]);
		*from = conf_url_from(o);
		*at = &late.url_at;
		return 0;
	}
	if (u == NULL || *u == '\0')
		return usage_error("--redlock needs the URLs of its "
		    "masters: -u URL for each (or RLOCK_URL='URL "
		    "URL URL')");
	n = strlen(u);
	copy = xstrdup(u);
	for (tok = strtok_r(copy, " \t\n", &save); tok &&
	    o->nurls <= REDLOCK_MAX; tok = strtok_r(NULL, " \t\n",
	    &save)) {
		o->urls = xrealloc(o->urls, (size_t)(o->nurls + 1) *
		    sizeof(*o->urls));
		o->urls[o->nurls++] = xstrdup(tok);
	}
	/* strtok_r cut it with NULs: zero its whole length. */
	explicit_bzero(copy, n);
	free(copy);
	return 0;
}

/* How many masters; at: the files' url line, when they came from there. */
static int
redlock_count(struct rlock_opts *o, const struct conf_at *at)
{
	char where[600] = "";
	int st;

	if (o->nurls >= 3 && o->nurls % 2 == 1 && o->nurls <= REDLOCK_MAX)
		return 0;
	if (!given[OPT_REDLOCK] && late.redlock_at.file)
		snprintf(where, sizeof(where), "; redlock is set in %s:%d",
		    late.redlock_at.file, late.redlock_at.line);
	/* The files' URLs are the files' to fix. */
	conf_at = at;
	st = usage_error("--redlock needs an odd number of independent "
	    "masters, 3 to %d (got %d%s)%s", REDLOCK_MAX, o->nurls,
	    o->nurls > REDLOCK_MAX ? " or more" : "", where);
	conf_at = NULL;
	return st;
}

/* Each master: a URL that parses, plain redis://, rediss:// or unix://. */
static int
redlock_check(struct rlock_opts *o, const char *from)
{
	int i, st;

	for (i = 0; i < o->nurls; i++) {
		scrub_free(o->url);
		o->url = xstrdup(o->urls[i]);
		if ((st = check_url(o, from)) != 0)
			return st;
		if (strncmp(o->url, "redis://", 8) != 0 &&
		    strncmp(o->url, "rediss://", 9) != 0 &&
		    strncmp(o->url, "unix://", 7) != 0)
			return usage_error("--redlock takes one redis://, "
			    "rediss:// or unix:// URL per master (URL %d is "
			    "not)", i + 1);
	}
	return 0;
}

/*
 * --redlock: the masters come from every -u, or else from $RLOCK_URL (or
 * $REDIS_URL) split at blanks, or else from the files' url lines; plain
 * redis:// or unix:// each, an odd number of them, so a majority is a
 * clear quorum.
 */
static int
redlock_urls(struct rlock_opts *o)
{
	const struct conf_at *at;
	const char *from;
	int st;

	if ((st = redlock_sources(o, &from, &at)) != 0)
		return st;
	o->url_from = from;
	if ((st = redlock_count(o, at)) != 0)
		return st;
	if (o->fair || o->limit > 1)
		return usage_error("%s does not go with --redlock", o->fair ?
		    "--fair" : "--limit");
	if (o->shared)
		return usage_error("--shared does not go with --redlock: a "
		    "shared lock is held on one server (or behind Sentinel "
		    "or Cluster)");
	conf_at = at;
	st = redlock_check(o, from);
	conf_at = NULL;
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

/* "tls-cert (FILE:LINE)": the source tls.c names in its messages. */
static const char *
conf_src(struct rlock_opts *o, const char *name, const struct conf_at *at)
{
	char buf[600];

	snprintf(buf, sizeof(buf), "%s (%s:%d)", name, at->file, at->line);
	return keep(o, buf);
}

/*
 * The files' TLS files, where neither the options nor the environment
 * named one: the CA as one setting, the key only with the files' cert.
 * Checked only when TLS is on, as tls_setup reads them only then.
 */
static int
tls_conf(struct rlock_opts *o)
{
	struct tls_cfg *t = &o->tls;
	int on = t->on || o->tls_forced, st = 0;

	if (t->cacert == NULL && t->cacertdir == NULL) {
		if (late.cacert && on)
			st = conf_readable("tls-cacert", late.cacert,
			    &late.cacert_at, 0);
		if (late.cacert)
			t->cacert = late.cacert, t->cacert_src = conf_src(o,
			    "tls-cacert", &late.cacert_at);
		if (st == 0 && late.cacertdir && on)
			st = conf_readable("tls-cacertdir", late.cacertdir,
			    &late.cacertdir_at, 1);
		t->cacertdir = late.cacertdir;
	}
	if (st == 0 && t->cert == NULL && late.cert) {
		if (on && (st = conf_readable("tls-cert", late.cert,
		    &late.cert_at, 0)) != 0)
			return st;
		t->cert = late.cert;
		t->cert_src = conf_src(o, "tls-cert", &late.cert_at);
		if (t->key == NULL && late.key && on)
			st = conf_readable("tls-key", late.key, &late.key_at,
			    0);
		if (t->key == NULL && late.key)
			t->key = late.key, t->key_src = conf_src(o, "tls-key",
			    &late.key_at);
	}
	return st;
}

/*
 * The TLS files a crontab sets once. An option beats its variable, and a
 * variable its file's setting; a key from the environment goes only with
 * a certificate from there too, as a --tls-cert on the command line is
 * another certificate.
 */
static int
tls_env(struct rlock_opts *o)
{
	struct tls_cfg *t = &o->tls;
	const char *v;
	int st;

	if (t->cacert == NULL && t->cacertdir == NULL &&
	    (v = getenv("RLOCK_TLS_CACERT")) && *v)
		t->cacert = v, t->cacert_src = "RLOCK_TLS_CACERT";
	if (t->cert == NULL && (v = getenv("RLOCK_TLS_CERT")) && *v)
		t->cert = v, t->cert_src = "RLOCK_TLS_CERT";
	if (t->key == NULL && t->cert_src && (v = getenv("RLOCK_TLS_KEY")) &&
	    *v)
		t->key = v, t->key_src = "RLOCK_TLS_KEY";
	if ((st = tls_conf(o)) != 0)
		return st;
	if (t->sni && *t->sni == '\0')
		return usage_error("--tls-sni needs a name");
	if (o->tls_forced)
		t->on = 1;
	if (!t->on && (t->cacert || t->cacertdir || t->cert || t->sni ||
	    t->insecure))
		msg_verbose("no TLS (no --tls, no rediss:// URL): the TLS "
		    "options are not used");
	return 0;
}

/* Does a URL in use (from -u or the environment) carry a password? */
static int
url_has_password(const struct rlock_opts *o)
{
	size_t off, len;
	int i;

	if (!o->redlock)
		return url_password_span(o->url, &off, &len) == 0;
	for (i = 0; i < o->nurls; i++)
		if (url_password_span(o->urls[i], &off, &len) == 0)
			return 1;
	return 0;
}

/*
 * The password: --password-file, else $RLOCK_PASSWORD or $REDISCLI_AUTH,
 * else a password in the URL (config.c), else the files' password-file.
 * The files' one is read by the command line's own code.
 */
static int
password_fallbacks(struct rlock_opts *o)
{
	const char *p;
	int st;

	if (o->password == NULL) {
		if ((p = getenv("RLOCK_PASSWORD")) && *p)
			o->password = xstrdup(p);
		else if ((p = getenv("REDISCLI_AUTH")) && *p)
			o->password = xstrdup(p);
	}
	if (o->password || late.password_file == NULL || url_has_password(o))
		return 0;
	if ((st = conf_readable("password-file", late.password_file,
	    &late.pf_at, 0)) != 0)
		return st;
	optarg = (char *)late.password_file;
	common_opt(o, OPT_PASSWORD_FILE, &st);
	return st;
}

static int
url_fallbacks(struct rlock_opts *o)
{
	const char *u, *from = "-u";
	int st;

	if (o->redlock) {
		st = redlock_urls(o);
		return st ? st : password_fallbacks(o);
	}
	o->url_from = from;
	if (o->url == NULL) {
		if ((u = getenv("RLOCK_URL")) && *u)
			o->url = xstrdup(u), from = "RLOCK_URL";
		else if ((u = getenv("REDIS_URL")) && *u)
			o->url = xstrdup(u), from = "REDIS_URL";
		else if (late.nurls > 0)
			o->url = xstrdup(late.urls[late.nurls - 1]),
			    from = conf_url_from(o);
		else
			o->url = xstrdup("redis://127.0.0.1:6379/0");
		o->url_from = strcmp(from, "-u") != 0 ? from : NULL;
	}
	if ((st = check_url(o, from)) != 0)
		return st;
	return password_fallbacks(o);
}

/* A flag's setting: yes (or alone) sets it, no clears what an earlier
 * file set. */
static int
conf_flag(struct rlock_opts *o, int c, int on, const struct conf_at *at)
{
	if (given[c])
		return 0;
	switch (c) {
	case OPT_REDLOCK:
		o->redlock = on;
		late.redlock_at = *at;
		break;
	case OPT_TLS:
		o->tls_forced = on;
		break;
	case OPT_SYSLOG:
		late.syslog = on;
		break;
	}
	return 0;
}

/* A url line: no password in it (the file may be read by all), and one
 * that parses. A later file's url lines replace an earlier file's. */
static int
conf_url(char *value, const struct conf_at *at)
{
	struct endpoint ep;
	const char *why = "";
	size_t off, len;
	int bad;

	if (url_password_span(value, &off, &len) == 0)
		return conf_error(at, "url holds a password: it stays out of a "
		    "configuration file; put it in a file of its own and name "
		    "that with password-file");
	memset(&ep, 0, sizeof(ep));
	bad = url_parse(value, &ep, &why) < 0;
	url_free(&ep);
	if (bad)
		return conf_error(at, "bad Redis URL '%s': %s", value, why);
	if (late.nurls > 0 && strcmp(late.url_at.file, at->file) != 0)
		late.nurls = 0;
	if (late.nurls <= REDLOCK_MAX) {
		late.urls = xrealloc(late.urls, (size_t)(late.nurls + 1) *
		    sizeof(*late.urls));
		late.urls[late.nurls++] = value;
	}
	late.url_at = *at;
	return 0;
}

/* The long option a file's name is, or NULL. */
static const struct option *
long_option(const char *name)
{
	const struct option *lo;

	for (lo = RUN_LONG; lo->name; lo++)
		if (strcmp(lo->name, name) == 0)
			return lo;
	for (lo = SUB_LONG; lo->name; lo++)
		if (strcmp(lo->name, name) == 0)
			return lo;
	return NULL;
}

/*
 * One setting of a file (conffile.c's callback), checked by the command
 * line's own code. The command line wins: a setting it gave is checked
 * and then dropped. The ones the environment beats wait in `late`.
 */
static int
conf_opt(void *ctx, const char *name, char *value, const struct conf_at *in)
{
	struct rlock_opts *o = ctx, tmp;
	const struct option *lo = long_option(name);
	struct conf_at at = *in;
	int c, st, run_only;

	if (lo == NULL || !conf_allowed(name))
		return conf_refuse(in, name, lo != NULL);
	c = lo->val;
	/* The file's name outlives the call: one copy per file. */
	if (late.file == NULL || strcmp(late.file, in->file) != 0)
		late.file = keep(o, in->file);
	at.file = late.file;
	if (lo->has_arg == no_argument) {
		if (value == NULL || strcmp(value, "yes") == 0)
			return conf_flag(o, c, 1, &at);
		if (strcmp(value, "no") == 0)
			return conf_flag(o, c, 0, &at);
		return conf_error(in, "%s is a flag: '%s' alone, or '%s = yes' "
		    "or '%s = no'", name, name, name, name);
	}
	if (value == NULL || *value == '\0')
		return conf_error(in, "%s needs a value: '%s = VALUE'", name,
		    name);
	value = keep(o, value);
	switch (c) {
	case 'u':
		return conf_url(value, &at);
	case OPT_PASSWORD_FILE:
		late.password_file = value, late.pf_at = at;
		return 0;
	case OPT_TLS_CACERT:
		late.cacert = value, late.cacert_at = at;
		return 0;
	case OPT_TLS_CACERTDIR:
		late.cacertdir = value, late.cacertdir_at = at;
		return 0;
	case OPT_TLS_CERT:
		late.cert = value, late.cert_at = at;
		return 0;
	case OPT_TLS_KEY:
		late.key = value, late.key_at = at;
		return 0;
	}
	tmp = *o;
	optarg = value;
	conf_at = in;
	st = run_opt(given[c] ? &tmp : o, c, &run_only);
	conf_at = NULL;
	return st;
}

/* The run options the lock's mode (mode.h) does not take. */
static int
mode_check(const struct rlock_opts *o)
{
	const struct lock_mode *m = o->lmode;
	const char *opt = NULL;

	if ((m->refuses & MODE_NO_LIMIT) && given['N'])
		opt = "--limit";
	else if ((m->refuses & MODE_NO_SHARED) && o->shared)
		opt = "--shared";
	else if ((m->refuses & MODE_NO_MIN_HOLD) && given[OPT_MIN_HOLD])
		opt = "--min-hold";
	else if ((m->refuses & MODE_NO_REDLOCK) && o->redlock)
		opt = "--redlock";
	if (opt == NULL)
		return 0;
	return usage_error("%s does not go with --%s: %s", opt, m->name,
	    m->refused_why);
}

/* The files, between the command line and the environment fallbacks. */
static int
load_conf(struct rlock_opts *o)
{
	int st;

	if ((st = conf_load(o->config, conf_opt, o)) != 0)
		return st;
	if (late.key && !late.cert)
		return conf_error(&late.key_at, "tls-key without tls-cert: "
		    "name the certificate too");
	if (late.syslog && (o->mode == MODE_RUN || o->mode == MODE_LOCK))
		msg_syslog_open();
	return 0;
}

int
cli_parse(int argc, char **argv, struct rlock_opts *o)
{
	int c, st, run_only, any_run_only = 0;

	set_defaults(o);
	opterr = 0;
	while ((c = next_opt(argc, argv, RUN_SHORT, RUN_LONG, NULL,
	    &st)) != -1) {
		if ((st = run_opt(o, c, &run_only)) != 0)
			return st;
		any_run_only |= run_only;
	}
	if (st)
		return st;
	if (o->mode == MODE_HELP || o->mode == MODE_VERSION)
		return 0;
	if (o->key == NULL) {
		if (optind >= argc)
			return usage_error("missing -k KEY and command");
		if ((st = select_mode(argc, argv, o, any_run_only)) != 0)
			return st;
	} else if ((st = finish_run(argc, argv, o)) != 0) {
		return st;
	}
	if (o->mode == MODE_HELP || o->mode == MODE_UNLOCK)
		return 0;	/* "status --help"; unlock asks no server */
	if ((st = load_conf(o)) != 0)
		return st;
	if ((st = mode_check(o)) != 0)
		return st;
	if ((st = url_fallbacks(o)) != 0)
		return st;
	return tls_env(o);
}

void
cli_free(struct rlock_opts *o)
{
	int i;

	for (i = 0; i < o->nurls; i++)
		scrub_free(o->urls[i]);
	free(o->urls);
	o->urls = NULL;
	o->nurls = 0;
	for (i = 0; i < o->neps; i++)
		url_free(&o->eps[i]);
	free(o->eps);
	o->eps = NULL;
	o->neps = 0;
	scrub_free(o->url);
	scrub_free(o->password);
	o->url = o->password = NULL;
	for (i = 0; i < o->nkept; i++)
		free(o->kept[i]);
	free(o->kept);
	o->kept = NULL;
	o->nkept = 0;
	free(late.urls);
	late.urls = NULL;
	late.nurls = 0;
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
		size_t n = strlen(o->cmd[i]);

		memcpy(p, o->cmd[i], n);
		p += n;
		*p++ = ' ';
	}
	if (p > s)
		p--;
	*p = '\0';
	cut_command_line(s);
	return s;
}
