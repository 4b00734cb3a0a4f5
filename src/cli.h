/* SPDX-License-Identifier: MIT */
/*
 * argv, the environment and rlock.conf to a struct rlock_opts: the option
 * table, usage text, environment fallbacks, the configuration files'
 * settings, --password-file, and blanking a password from argv. No
 * network. Never exits: returns a status for main to use.
 */
#ifndef RLOCK_CLI_H
#define RLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "tls_cfg.h"

#define RLOCK_VERSION "0.1.0"
#define KEY_MAX_LEN 512
#define LEASE_MIN_MS 100

enum rl_mode { MODE_RUN, MODE_STATUS, MODE_LIST, MODE_RELEASE, MODE_HELP,
    MODE_VERSION, MODE_LOCK, MODE_UNLOCK };
enum on_lost { LOST_TERM, LOST_KILL, LOST_IGNORE };

struct lock_mode;	/* mode.h */

struct rlock_opts {
	enum rl_mode mode;
	const struct lock_mode *lmode;	/* what the lock is: rlock's own,
					 * or --redisson */
	const char *key;		/* points into argv */
	int64_t wait_ms;		/* -1: forever; 0: -n */
	int64_t lease_ms;
	int conflict_exit;
	long limit;
	int shared;			/* -s: a shared (read) lock */
	int fair;
	enum on_lost on_lost;
	int64_t kill_after_ms;
	int64_t min_hold_ms;		/* --min-hold; 0: none */
	int64_t max_hold_ms;		/* --max-hold; 0: none */
	const char *url_from;		/* "-u", "RLOCK_URL", "REDIS_URL",
					 * "url in FILE:LINE" or NULL (the
					 * default URL) */
	int redlock;			/* --redlock: every -u is a master */
	char **urls;			/* owned, passwords still inside: the
					 * last is the URL, or with --redlock
					 * all of them */
	int nurls;
	struct endpoint *eps;		/* url, or urls with --redlock, as
					 * parsed once; owned */
	int neps;
	char *password;			/* owned; NULL when none */
	int password_from_file;		/* --password-file beats the URL */
	const char *password_file;	/* its path, read again at connects */
	int64_t connect_timeout_ms;
	const char *prefix;
	const char *shell_cmd;		/* -c */
	char **cmd;			/* COMMAND and ARGs, NULL-terminated */
	long owner;			/* rlock lock: the section's owner */
	int export_env;			/* rlock lock --export */
	/* TLS: tls.on when --tls or any URL is rediss*; the files from the
	 * options or else $RLOCK_TLS_CACERT, $RLOCK_TLS_CERT and
	 * $RLOCK_TLS_KEY. */
	struct tls_cfg tls;
	int tls_forced;			/* --tls: TLS even for redis:// */
	int json, prometheus, force;
	/* status keys, list pattern, release key */
	char **args;
	int nargs;
	const char *config;		/* --config FILE */
	/* owned: what o holds from rlock.conf */
	char **kept;
	int nkept;
};

/*
 * Parse argv (password blanked in place), the environment and the
 * configuration files (rlock.conf(5)) into o. Returns 0, or an exit status
 * after printing the one-line message: 64 for the command line, 78 for a
 * file.
 */
int cli_parse(int argc, char **argv, struct rlock_opts *o);

void cli_free(struct rlock_opts *o);

/* --help text on stdout. */
void cli_usage(void);

/* The command line recorded in Redis (and shown by status) is cut to
 * this many bytes, the last three "...". */
#define CMDLINE_MAX 1024

/* "COMMAND ARG ..." or the -c string (rlock lock: the owner's command
 * line), at most CMDLINE_MAX bytes, for holder metadata; caller frees. */
char *cli_command_line(const struct rlock_opts *o);

#endif
