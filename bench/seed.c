// SPDX-License-Identifier: MIT
/*
 * seed SOCKET KEY [COMMAND [ARG...]]: the seed protocol, the least a
 * Redis lock can do, as the benchmark's yardstick for rlock: connect to
 * the unix SOCKET, SET KEY TOKEN NX PX 30000, run COMMAND if given (fork,
 * execvp, wait), then delete KEY if it still holds TOKEN with one EVAL:
 * two round trips. No renewal, no holder record, no fence, no waiting: a
 * KEY that is held is a failure (status 75). Status 0 when the cycle was
 * done and COMMAND (if any) exited 0, 1 on any other error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define DEL_IF_OURS "if redis.call('GET', KEYS[1]) == ARGV[1] then " \
	"return redis.call('DEL', KEYS[1]) end return 0"

static int
run(char **argv)
{
	pid_t p;
	int st;

	if ((p = fork()) == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (p < 0 || waitpid(p, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
main(int argc, char **argv)
{
	unsigned char raw[16];
	char token[33];
	redisContext *c;
	redisReply *r;
	int i, st = 0, ok;

	if (argc < 3) {
		fputs("usage: seed SOCKET KEY [COMMAND [ARG...]]\n", stderr);
		return 1;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return 1;
	for (i = 0; i < 16; i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	c = redisConnectUnix(argv[1]);
	if (c == NULL || c->err) {
		fprintf(stderr, "seed: %s\n", c ? c->errstr : "out of memory");
		return 1;
	}
	r = redisCommand(c, "SET %s %s NX PX 30000", argv[2], token);
	ok = r && r->type == REDIS_REPLY_STATUS;
	if (r == NULL || (!ok && r->type != REDIS_REPLY_NIL)) {
		fprintf(stderr, "seed: SET: %s\n", r ? r->str : c->errstr);
		st = 1;
	} else if (!ok) {
		st = 75;
	}
	freeReplyObject(r);
	if (st == 0 && argc > 3 && (st = run(argv + 3)) < 0)
		st = 1;
	if (ok) {
		r = redisCommand(c, "EVAL %s 1 %s %s", DEL_IF_OURS, argv[2],
		    token);
		if (r == NULL || r->type != REDIS_REPLY_INTEGER ||
		    r->integer != 1) {
			fprintf(stderr, "seed: EVAL: %s\n", r ? "not ours" :
			    c->errstr);
			st = 1;
		}
		freeReplyObject(r);
	}
	redisFree(c);
	return st;
}
