// SPDX-License-Identifier: MIT
/*
 * The operator's subcommands: status, list and release --force. status and
 * list only look (inspect.lua writes nothing); release --force breaks a
 * lock in one script (force_release.lua). Here: the arguments, the SCAN
 * loop, the exit statuses; report_view.c reads and prints one KEY.
 * Everything is read before anything is printed, so an error never leaves
 * half a JSON document.
 *
 * --json: `status` prints an array with one object per KEY, in the order
 * given; `list` an array of the held locks, sorted by KEY. Strings are the
 * bytes Redis holds, JSON-escaped; a byte that is not valid UTF-8 becomes
 * \u00XX (that byte's value), so the output is always valid JSON. A value
 * rlock did not record (a holder key some other client wrote) is null.
 *
 *   [
 *     {
 *       "key": "deploy",                 KEY as given to -k
 *       "held": true,                    false: free
 *       "mode": "mutex",                 "mutex", "semaphore"; null if free
 *       "resting": false,                true: held only by runs that
 *                                        ended (--min-hold); else false
 *       "limit": 1,                      N of --limit (1: mutex); null if
 *                                        free
 *       "server_time_ms": 1732208113468, Redis TIME when looked at
 *       "holders": [                     [] when free; one per slot taken,
 *         {                              soonest lease end first
 *           "user": "alice",
 *           "host": "web1",
 *           "pid": 4242,
 *           "command": "make -j8 all",
 *           "since_ms": 1732208101123,   server clock, ms since the epoch
 *           "held_ms": 12345,            server_time_ms - since_ms
 *           "lease_ms": 30000,           the holder's --lease
 *           "lease_left_ms": 17600,      PTTL; null: the key never expires
 *           "fence": 1732208101123,      its RLOCK_FENCE
 *           "finished": null,            while its run goes on; after it
 *                                        ended (--min-hold keeps KEY):
 *                                        { "ended_ms", "exit_status",
 *                                          "hold_until_ms" }
 *           "skips": 0                   runs not obtained against it
 *         }
 *       ],
 *       "queue": {                       --fair waiters
 *         "length": 2,                   live waiters
 *         "waiters": [                   the first 5, next in line first
 *           { "user": "bob", "host": "web2", "pid": 77, "command": "make" }
 *         ]
 *       },
 *       "last_run": {                    the last finished run; null if
 *         "user": "alice",               none is recorded
 *         "host": "web1",
 *         "pid": 4101,
 *         "command": "make -j8 all",
 *         "started_ms": 1732207900100,   server clock
 *         "ended_ms": 1732207960200,
 *         "duration_ms": 60100,          ended_ms - started_ms
 *         "exit_status": 0,              the status rlock exited with
 *         "fence": 1732207900100,
 *         "lease_lost": false,           true: exit 70, the lease was lost
 *         "last_success_ms": 1732207960200,  ended_ms of the last run
 *                                        that exited 0 with its lease;
 *                                        null: none
 *         "skips": 3,                    runs not obtained against its
 *                                        grant (-n, or --timeout)
 *         "last_skip": {                 the last of them; null if none
 *           "user": "bob", "host": "web2", "pid": 77,
 *           "at_ms": 1732207930000
 *         }
 *       }
 *     }
 *   ]
 *
 * Text: `status` prints one block per KEY; `list` one line per held lock,
 * tab-separated KEY, HOLDER, LEASE LEFT, MODE, COMMAND (a header line only
 * on a terminal), with control and non-UTF-8 bytes and backslashes shown
 * as \xHH and \\, so a field never holds a tab or a newline.
 */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "exitcode.h"
#include "glob.h"
#include "keys.h"
#include "lock.h"
#include "mode.h"
#include "report_prom.h"
#include "report_view.h"
#include "util.h"

/* Keys SCAN looks at per call: bounds the time Redis spends on each. */
#define SCAN_COUNT "1000"

/* Read every KEY of status into *out (the caller frees it with
 * report_view_free_all): 0 all held, 1 one free, -1 error (in node). */
static int
status_read(const struct rlock_opts *o, struct lock_node *node,
    struct view **out)
{
	struct view *v = xcalloc((size_t)o->nargs, sizeof(*v));
	size_t i, n = (size_t)o->nargs;
	int st = RL_EXIT_OK;

	*out = v;
	for (i = 0; i < n && st >= 0; i++) {
		v[i].key = o->args[i];
		v[i].keylen = strlen(o->args[i]);
		if (report_view_inspect(node, o->lmode, o->prefix, &v[i]) < 0)
			st = -1;
		else if (!view_held(&v[i]))
			st = RL_EXIT_FALSE;
	}
	return st;
}

/* rlock status: 0 all held, 1 one free, -1 error (in node). */
static int
status_main(const struct rlock_opts *o, struct lock_node *node)
{
	size_t i, n = (size_t)o->nargs;
	struct view *v;
	int st;

	st = status_read(o, node, &v);
	if (st >= 0 && o->prometheus) {
		prom_print(&(struct prom_src){ NULL, v, n }, 1);
	} else if (st >= 0 && o->json) {
		report_view_print_json(v, n);
	}
	for (i = 0; i < n && st >= 0 && !o->json && !o->prometheus; i++) {
		if (i > 0)
			putchar('\n');
		report_view_print_text(&v[i]);
	}
	report_view_free_all(v, n, 0);
	return st;
}

struct found {
	struct view *v;
	size_t n, cap;
};

/*
 * A name SCAN returned: a lock if it is P{KEY} (mutex) or P{KEY}:sem
 * (semaphore) with KEY matching the pattern (keys.h: a marked KEY is
 * unmarked). The helper keys (:meta, :fence, :q, :w:TOKEN...) end
 * otherwise. KEY may itself hold "}", so the pattern is checked again
 * here on KEY alone; inspect.lua has the last word on whether it is held.
 */
static void
candidate(struct found *f, const char *prefix, const char *pat,
    const char *name, size_t len)
{
	const char *key;
	size_t kl;

	if ((key = keys_parse(prefix, name, len, "", &kl)) == NULL &&
	    (key = keys_parse(prefix, name, len, ":sem", &kl)) == NULL)
		return;
	if (kl > KEY_MAX_LEN || memchr(key, '\0', kl) ||
	    !glob_match(pat, strlen(pat), key, kl))
		return;
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	memset(&f->v[f->n], 0, sizeof(f->v[0]));
	f->v[f->n].key = xstrndup(key, kl);
	f->v[f->n++].keylen = kl;
}

struct scan {
	const char *prefix, *pat;
	struct found *f;
};

/* Walk one server's keyspace in COUNT-sized steps: never blocks Redis.
 * A Cluster spreads the locks over its masters: each of them is walked
 * (lock_node_each_master). */
static int
scan_all(struct lock_node *node, void *arg)
{
	const struct scan *sc = arg;
	const char *prefix = sc->prefix, *pat = sc->pat;
	char cursor[32] = "0";
	const char *argv[6] = { "SCAN", cursor, "MATCH", NULL, "COUNT",
	    SCAN_COUNT };
	size_t lens[6] = { 4, 0, 5, 0, 5, strlen(SCAN_COUNT) }, i;
	/* A PATTERN whose first character may stand for a '}' or '\' may
	 * match a KEY stored marked, P{\KEY} (keys.h): then every P{* is
	 * scanned and candidate() matches the KEYs (a leading '*' matches
	 * the mark anyway). */
	char *match = glob_scan_match(prefix, pat[0] != '\0' &&
	    strchr("?[}\\", pat[0]) != NULL ? "*" : pat, &lens[3]);
	const struct reply *c, *e;
	struct reply *r;
	int st = -1, again = 1;

	argv[3] = match;
	for (;;) {
		lens[1] = strlen(cursor);
		r = lock_node_command(node, 6, argv, lens);
		/* Closed on SCAN: a proxy that does not take it (twemproxy),
		 * or a restart. Once more, on a new connection that answers
		 * its login first, tells them apart (report_main). */
		if (r == NULL && again-- > 0 &&
		    failure_closed_on(lock_node_failure(node), CMD_SCAN))
			r = lock_node_command(node, 6, argv, lens);
		if (r == NULL)
			break;
		if (r->type != REPLY_ARRAY || r->elements != 2 ||
		    (c = r->element[0])->type != REPLY_STRING ||
		    c->len == 0 || c->len >= sizeof(cursor) ||
		    r->element[1]->type != REPLY_ARRAY) {
			lock_node_fail_reply(node, "SCAN", r);
			reply_free(r);
			break;
		}
		for (i = 0; i < r->element[1]->elements; i++)
			if ((e = r->element[1]->element[i])->type ==
			    REPLY_STRING)
				candidate(sc->f, prefix, pat, e->str, e->len);
		memcpy(cursor, c->str, c->len + 1);
		reply_free(r);
		if (strcmp(cursor, "0") == 0) {
			st = 0;
			break;
		}
	}
	free(match);
	return st;
}

static int
view_cmp(const void *a, const void *b)
{
	const struct view *x = a, *y = b;
	size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

/* Sorted, and once each: SCAN may return a name twice, a KEY may have
 * both a P{KEY} and a P{KEY}:sem. */
static void
found_unique(struct found *f)
{
	size_t i, o = 0;

	if (f->n == 0)
		return;
	qsort(f->v, f->n, sizeof(*f->v), view_cmp);
	for (i = 1; i < f->n; i++) {
		if (view_cmp(&f->v[o], &f->v[i]) == 0)
			free(f->v[i].key);
		else
			f->v[++o] = f->v[i];
	}
	f->n = o + 1;
}

/* rlock list: 0, or -1 on an error (in node). */
static int
list_main(const struct rlock_opts *o, struct lock_node *node)
{
	struct found f = { NULL, 0, 0 };
	struct scan sc = { o->prefix, o->nargs > 0 ? o->args[0] : "*", &f };
	struct view t;
	size_t i, held = 0;
	int st;

	if ((st = lock_node_each_master(node, scan_all, &sc)) == 0)
		found_unique(&f);
	for (i = 0; i < f.n && st == 0; i++) {
		/* Some other client's hash or list under a lock's name is
		 * not a lock: skip it rather than fail the whole list. */
		if ((st = report_view_inspect(node, o->lmode, o->prefix,
		    &f.v[i])) < 0 &&
		    lock_node_is_open(node) &&
		    strcmp(lock_node_failure(node)->code, "WRONGTYPE") == 0) {
			msg_verbose("skipping: %s",
			    lock_node_failure(node)->why);
			st = 0;
		}
		/* The held views first, in order. */
		if (st == 0 && f.v[i].r != NULL && view_held(&f.v[i])) {
			t = f.v[held];
			f.v[held++] = f.v[i];
			f.v[i] = t;
		}
	}
	if (st == 0 && o->json) {
		report_view_print_json(f.v, held);
	} else if (st == 0) {
		if (isatty(STDOUT_FILENO))
			puts("KEY\tHOLDER\tLEASE LEFT\tMODE\tCOMMAND");
		for (i = 0; i < held; i++)
			report_view_print_line(&f.v[i]);
	}
	report_view_free_all(f.v, f.n, 1);
	return st;
}

/* rlock release --force: 0 broken, 1 nothing held, -1 error (in node).
 * The broken holders, one line each: who to call. */
static int
release_main(const struct rlock_opts *o, struct lock_node *node)
{
	struct lock_keys k;
	struct mode_call c;
	struct reply *r;
	int st = RL_EXIT_OK;
	size_t i;

	o->lmode->keys(&k, o->prefix, o->args[0], strlen(o->args[0]), NULL);
	o->lmode->force(&c, &k);
	r = lock_node_script(node, &c.a);
	lock_keys_free(&k);
	if (r == NULL)
		return -1;
	for (i = 0; r->type == REPLY_ARRAY && i < r->elements; i++)
		if (!view_strings(r->element[i], VIEW_WHO_N, 0))
			break;
	if (r->type != REPLY_ARRAY || i < r->elements) {
		lock_node_fail_reply(node, "release --force", r);
		st = -1;
	} else if (r->elements == 0) {
		msg_warn("'%s' is not held; nothing to release", o->args[0]);
		st = RL_EXIT_FALSE;
	}
	for (i = 0; st == RL_EXIT_OK && i < r->elements; i++) {
		fputs("broke '", stdout);
		view_put_text(o->args[0], strlen(o->args[0]));
		fputs("', held by ", stdout);
		view_put_who(r->element[i]->element, 1);
		putchar('\n');
	}
	reply_free(r);
	return st;
}

/*
 * util-linux's close_stdout: a full disk or a closed pipe must not pass
 * for success. A reader that went away (| head) is not an error, though.
 */
static int
close_stdout(int st)
{
	errno = 0;
	if ((fflush(stdout) == 0 && !ferror(stdout)) || errno == EPIPE)
		return st;
	msg_err("write error on standard output%s%s", errno ? ": " : "",
	    errno ? strerror(errno) : "");
	return RL_EXIT_IOERR;
}

static int
one_server(const struct rlock_opts *o, struct lock_node *node)
{
	if (o->mode == MODE_STATUS)
		return status_main(o, node);
	if (o->mode == MODE_LIST)
		return list_main(o, node);
	return release_main(o, node);
}

/*
 * The --redlock verdict once `answered` masters did: -1 (in fail) when
 * fewer than a majority answered; else status is 0 when a majority
 * (`yes`) shows every KEY held, release --force when it broke the lock
 * on one, list always.
 */
static int
verdict(const struct rlock_opts *o, struct lock *l, int answered, int yes,
    struct failure *fail)
{
	if (answered < lock_majority(l)) {
		failure_set(fail, RL_EXIT_UNAVAILABLE, "only %d of %d masters "
		    "answered", answered, lock_nodes(l));
		return -1;
	}
	if (o->mode == MODE_LIST)
		return RL_EXIT_OK;
	if (o->mode == MODE_RELEASE)
		return yes > 0 ? RL_EXIT_OK : RL_EXIT_FALSE;
	return yes >= lock_majority(l) ? RL_EXIT_OK : RL_EXIT_FALSE;
}

/*
 * --redlock: each master's own view, under its URL, since they may well
 * disagree (a master that was down, a lease that lapsed on one); release
 * --force breaks the lock on every master (verdict: the exit status).
 * With --json, an array of {"master": URL, "view": what one server would
 * print}.
 */
static int
each_master(const struct rlock_opts *o, struct lock *l, struct failure *fail)
{
	int i, n = lock_nodes(l), st, yes = 0, answered = 0;
	struct lock_node *p;
	char url[300];

	if (o->json)
		fputs("[\n", stdout);
	for (i = 0; i < n; i++) {
		p = lock_node(l, i);
		lock_node_name(p, url, sizeof(url));
		if (o->json) {
			printf("%s{\"master\": ", i ? ",\n" : "");
			json_string(stdout, url, strlen(url));
			fputs(", \"view\": ", stdout);
		} else {
			printf("%s== master %d of %d: %s\n", i ? "\n" : "",
			    i + 1, n, url);
		}
		st = lock_node_is_open(p) ? one_server(o, p) : -1;
		if (st < 0) {
			if (o->json)
				fputs("null", stdout);
			else
				printf("unreachable: %s\n",
				    lock_node_failure(p)->why);
			if (!lock_node_is_open(p) ||
			    lock_node_failure(p)->why[0])
				msg_warn("%s: %s", url,
				    lock_node_failure(p)->why);
		} else {
			answered++;
			yes += st == 0;
		}
		if (o->json)
			fputs("}", stdout);
	}
	if (o->json)
		fputs("\n]\n", stdout);
	return verdict(o, l, answered, yes, fail);
}

/*
 * status --prometheus --redlock: one exposition for all masters (a metric
 * family may appear once), each series labelled with its master; printed
 * when a majority answered (verdict).
 */
static int
prom_masters(const struct rlock_opts *o, struct lock *l, struct failure *fail)
{
	int i, n = lock_nodes(l), st, yes = 0, answered = 0;
	struct prom_src *src = xcalloc((size_t)n, sizeof(*src));
	char (*url)[300] = xcalloc((size_t)n, sizeof(*url));
	struct view **v = xcalloc((size_t)n, sizeof(*v));
	struct lock_node *p;

	for (i = 0; i < n; i++) {
		p = lock_node(l, i);
		lock_node_name(p, url[i], sizeof(url[i]));
		st = lock_node_is_open(p) ? status_read(o, p, &v[i]) : -1;
		if (st < 0) {
			msg_warn("%s: %s", url[i], lock_node_failure(p)->why);
			continue;
		}
		yes += st == 0;
		src[answered++] = (struct prom_src){ url[i], v[i],
		    (size_t)o->nargs };
	}
	if (answered >= lock_majority(l))
		prom_print(src, (size_t)answered);
	for (i = 0; i < n; i++)
		if (v[i])
			report_view_free_all(v[i], (size_t)o->nargs, 0);
	free(v);
	free(url);
	free(src);
	return verdict(o, l, answered, yes, fail);
}

int
report_main(const struct rlock_opts *o)
{
	struct lock_cfg cfg;
	struct failure fail;
	struct lock *l;
	int st;

	config_lock(o, &cfg);
	l = lock_new(&cfg);
	if ((st = lock_open(l)) != 0) {
		config_report(&cfg, lock_failure(l), 0);
		goto out;
	}
	failure_clear(&fail);
	if (cfg.redlock && o->prometheus) {
		st = prom_masters(o, l, &fail);
	} else if (cfg.redlock) {
		st = each_master(o, l, &fail);
	} else {
		st = one_server(o, lock_node(l, 0));
		fail = *lock_node_failure(lock_node(l, 0));
		/* Closed on SCAN twice (scan_all): it is not taken there. */
		if (failure_refused(&fail, CMD_SCAN))
			snprintf(fail.why + strlen(fail.why), sizeof(fail.why) -
			    strlen(fail.why), "; rlock list needs it (rlock "
			    "status KEY does not)");
	}
	if (st < 0) {
		st = fail.status;
		config_report(&cfg, &fail, 0);
	}
	st = close_stdout(st);
out:
	lock_free(l);
	lock_cfg_free(&cfg);
	return st;
}
