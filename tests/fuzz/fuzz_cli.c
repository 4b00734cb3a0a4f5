// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: cli_parse on an argv made of the input split at NUL
 * bytes, after "rlock". Each word is its own allocation, writable as the
 * kernel's argv is (cli_parse blanks passwords in place), so AddressSanitizer
 * sees a read past any one word. A parsed run mode's command line is built
 * too (cli_command_line), since main does that next.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

/* getopt's argv is small in practice; more only slows the fuzzer down. */
#define MAX_WORDS 64

/* What cli_parse wrote to stderr in this run: room for a warning per word
 * (--password-file may warn each time) and the error. */
static char errbuf[(MAX_WORDS + 2) * 2048];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/*
	 * cli_parse writes a line per usage error: keep it off the terminal,
	 * in memory, where check_shape reads it. Not by freopen(stderr):
	 * libFuzzer prints its statistics and crash notes through that same
	 * FILE, and the sanitizers write to fd 2. glibc's stderr is an
	 * ordinary variable, and libFuzzer took its value before this runs,
	 * so pointing ours elsewhere moves only rlock's messages.
	 */
	if ((stderr = fmemopen(errbuf, sizeof(errbuf), "w")) == NULL)
		abort();
	/* The input alone decides; an inherited variable would not. */
	unsetenv("RLOCK_URL");
	unsetenv("REDIS_URL");
	unsetenv("RLOCK_PASSWORD");
	unsetenv("REDISCLI_AUTH");
	unsetenv("POSIXLY_CORRECT");
	return 0;
}

/*
 * The messages' contract: every line is "rlock: ..." (a warning may come
 * before the error) or the Try line, with no control byte a word from
 * argv could smuggle in to split it or drive the terminal.
 */
static void
check_shape(void)
{
	static const char try[] = "Try 'rlock --help' for more information.";
	const char *line = errbuf, *nl;

	for (; *line; line = nl + 1) {
		if ((nl = strchr(line, '\n')) == NULL)
			abort();	/* a line without its end */
		if (strncmp(line, "rlock: ", 7) != 0 &&
		    ((size_t)(nl - line) != strlen(try) ||
		    strncmp(line, try, strlen(try)) != 0))
			abort();
		for (; line < nl; line++)
			if ((unsigned char)*line < 0x20 || *line == 0x7f)
				abort();
	}
}

/*
 * A message must name the word at fault: "option '--X' takes no value"
 * is only ever true of a word "--X=VALUE" (X a prefix of an option name,
 * which holds no quote) on the command line.
 */
static void
check_blame(char **argv, int argc)
{
	static const char head[] = "rlock: option '--";
	const char *x = errbuf + strlen(head) - 2, *q;
	size_t len;
	int i;

	if (strncmp(errbuf, head, strlen(head)) != 0 ||
	    (q = strchr(x, '\'')) == NULL ||
	    strncmp(q, "' takes no value\n", 17) != 0)
		return;
	len = (size_t)(q - x);
	for (i = 1; i < argc; i++)
		if (strncmp(argv[i], x, len) == 0 && argv[i][len] == '=')
			return;
	abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_WORDS + 2];
	struct rlock_opts o;
	const uint8_t *p = data, *end = data + size, *nul;
	int argc = 0, st;
	char *line;
	long n;

	argv[argc++] = strdup("rlock");
	while (p < end && argc <= MAX_WORDS) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (nul == NULL)
			nul = end;
		argv[argc] = malloc((size_t)(nul - p) + 1);
		memcpy(argv[argc], p, (size_t)(nul - p));
		argv[argc++][nul - p] = '\0';
		p = nul + 1;
	}
	argv[argc] = NULL;
	optind = 0;		/* glibc: start afresh, as a new process does */
	msg_level = MSG_NORMAL;
	rewind(stderr);
	st = cli_parse(argc, argv, &o);
	fflush(stderr);
	n = ftell(stderr);
	/* A full errbuf holds a cut line: nothing to judge it by. */
	if (n >= 0 && (size_t)n < sizeof(errbuf) - 1) {
		errbuf[n] = '\0';
		check_shape();
		if (st != 0)
			check_blame(argv, argc);
	}
	if (st == 0 && o.mode == MODE_RUN) {
		if (o.key == NULL || o.nurls == 0 || o.neps == 0 ||
		    (o.shell_cmd == NULL && o.cmd[0] == NULL))
			abort();
		line = cli_command_line(&o);
		free(line);
	}
	cli_free(&o);
	while (argc > 0)
		free(argv[--argc]);
	return 0;
}
