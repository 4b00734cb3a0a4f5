/* SPDX-License-Identifier: MIT */
/*
 * The configuration files of rlock.conf(5): which files, in which order,
 * whether their owner and mode may be trusted, and their lines cut into
 * name and value. What a value means is the caller's (cli.c), so a file
 * is checked exactly as the command line is. No network.
 */
#ifndef RLOCK_CONFFILE_H
#define RLOCK_CONFFILE_H

/* The system file's directory; the Makefile's SYSCONFDIR. */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif

/* Where a setting was read: file and line, for "rlock: FILE:LINE: ...". */
struct conf_at {
	const char *file;
	int line;
};

/*
 * Called once per setting, in the order read (system file, then user
 * file): value is NULL for a name standing alone. at and its file last
 * only for the call. Returns 0, or an exit status after its message.
 */
typedef int conf_fn(void *ctx, const char *name, char *value,
    const struct conf_at *at);

/*
 * Read the files: path, which by named (--config, RLOCK_CONFIG), else the
 * system file then the user file, naming each with -v. Returns 0, or 78
 * after the one-line message (or fn's status).
 */
int conf_load(const char *path, const char *by, conf_fn *fn, void *ctx);

/* "rlock: FILE:LINE: <fmt>" on stderr; returns 78. */
int conf_error(const struct conf_at *at, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
