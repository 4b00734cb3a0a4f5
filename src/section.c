// SPDX-License-Identifier: MIT
/*
 * Script sections. `rlock lock` takes KEY as a run does (run.c), then
 * forks a holder that detaches and runs the supervisor (supervise.c) with
 * the owner in COMMAND's place, and exits with the holder's answer. Each
 * holder listens on a socket in a directory of the user's own, named
 * OWNERPID.STARTTIME.HOLDERPID (the start time: a recycled pid is not the
 * owner), where `rlock unlock` and nested runs find it by their ancestry.
 */
#include "section.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "exitcode.h"
#include "util.h"
#include "watch.h"

/* How long a holder waits for a request once connected to, and a nested
 * run for a holder's answer. */
#define ASK_MS 1000

struct holder {
	struct sup_owner own;		/* first: the callbacks get it */
	struct watch_stat owner;	/* own.pid's */
	const char *key;
	const char *token;
	long long fence;
	int ready;			/* to the caller: 0, or its status */
	int client;			/* the unlock waiting for our end */
	struct sockaddr_un at;
};

static struct watch_stat owner;

/* /proc/PID/WHAT in buf, or where it links to (exe, fd/N); length or -1. */
static ssize_t
proc_read(long pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/%s", pid, what);
	if (strcmp(what, "cmdline") != 0) {
		n = readlink(path, buf, len - 1);
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* 1 if a and b are one program with one command line (a fork). */
static int
same_image(long a, long b)
{
	static const char *what[] = { "exe", "cmdline" };
	char x[4096], y[4096];
	ssize_t n;
	int i;

	for (i = 0; i < 2; i++)
		if ((n = proc_read(a, what[i], x, sizeof(x))) <= 0 ||
		    proc_read(b, what[i], y, sizeof(y)) != n ||
		    memcmp(x, y, (size_t)n) != 0)
			return 0;
	return 1;
}

/*
 * The shell that runs `rlock lock`: our parent, unless that is a subshell
 * made for our command substitution alone (bash makes one for
 * x=$(rlock lock ... 2>&1), every shell for $(rlock lock ... || exit)),
 * which ends with us: a fork of its own parent, which reads our stdout.
 */
static long
shell(void)
{
	long p = getppid();
	char out[64], fd[64], name[300];
	struct dirent *e;
	struct watch_stat pp;
	DIR *d;

	if (proc_read(getpid(), "fd/1", out, sizeof(out)) <= 0 ||
	    strncmp(out, "pipe:", 5) != 0 || watch_stat((pid_t)p, &pp) < 0 ||
	    !same_image(p, pp.ppid))
		return p;
	snprintf(name, sizeof(name), "/proc/%d/fd", pp.ppid);
	if ((d = opendir(name)) == NULL)
		return p;
	while ((e = readdir(d)) != NULL) {
		snprintf(name, sizeof(name), "fd/%s", e->d_name);
		if (proc_read(pp.ppid, name, fd, sizeof(fd)) > 0 &&
		    strcmp(fd, out) == 0) {
			p = pp.ppid;
			break;
		}
	}
	closedir(d);
	return p;
}

int
section_owner(struct rlock_opts *o)
{
	if (o->owner == 0)
		o->owner = shell();
	if (watch_stat((pid_t)o->owner, &owner) == 0)
		return 0;
	msg_err("--pid %ld: no such process", o->owner);
	return RL_EXIT_USAGE;
}

/* $XDG_RUNTIME_DIR/rlock, or /tmp/rlock-UID: a directory only we use. */
static int
rundir(char *buf, size_t len, int make)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if ((x != NULL && *x == '/' ? snprintf(buf, len, "%s/rlock", x) :
	    snprintf(buf, len, "/tmp/rlock-%ld", (long)getuid())) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (make && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -1;
	if (lstat(buf, &st) < 0)
		return -1;
	if (S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	    (st.st_mode & 077) == 0)
		return 0;
	errno = EPERM;
	return -1;
}

/* pre, then s shell-quoted. */
static void
quoted(const char *pre, const char *s)
{
	printf("%s'", pre);
	for (; *s; s++)
		fputs(*s == '\'' ? "'\\''" : (char[]){ *s, '\0' }, stdout);
	putchar('\'');
}

void
section_export(const char *key, const char *token, const char *fence)
{
	quoted("export RLOCK_KEY=", key);
	quoted(" RLOCK_TOKEN=", token);
	quoted(" RLOCK_FENCE=", fence ? fence : "");
	putchar('\n');
}

/* Tell `rlock lock` how it went: 0 held, or its status. */
static void
tell(struct holder *h, int st)
{
	unsigned char b = (unsigned char)st;

	if (h->ready < 0)
		return;
	(void)!write(h->ready, &b, 1);
	close(h->ready);
	h->ready = -1;
}

static void
started(struct sup_owner *w)
{
	tell((struct holder *)w, 0);
}

/*
 * The owner gone, or an unlock for our KEY: the section is over. A
 * request is 'u' (unlock) or 't' (a nested run asks for the token), then
 * KEY or nothing (any); the answer to another KEY is the byte 1.
 */
static int
ended(struct sup_owner *w)
{
	struct holder *h = (struct holder *)w;
	struct pollfd p = { .fd = w->fds[0], .events = POLLIN };
	char req[KEY_MAX_LEN + 2], ans[64] = { 1 };
	struct watch_stat now;
	ssize_t n;
	int c;

	if (p.fd >= 0 ? poll(&p, 1, 0) > 0 : watch_stat(w->pid, &now) < 0 ||
	    now.start != h->owner.start)
		return 1;
	while ((c = accept4(w->fds[1], NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		p = (struct pollfd){ .fd = c, .events = POLLIN };
		n = poll(&p, 1, ASK_MS) > 0 ? recv(c, req, sizeof(req),
		    MSG_DONTWAIT) : 0;
		if (n > 0 && (n == 1 || ((size_t)n - 1 == strlen(h->key) &&
		    memcmp(req + 1, h->key, (size_t)n - 1) == 0))) {
			if (req[0] == 'u') {
				h->client = c;
				return 1;
			}
			n = snprintf(ans, sizeof(ans), "%s %lld", h->token,
			    h->fence);
		} else {
			ans[0] = 1;
			n = 1;
		}
		(void)send(c, ans, (size_t)n, MSG_NOSIGNAL);
		close(c);
	}
	return 0;
}

/*
 * Keep nothing of the caller's but stderr (not even that when it is the
 * pipe stdout is, as in x=$(rlock lock 2>&1)): rlock's own files are all
 * close-on-exec, the caller's are not. Then listen, and watch the owner.
 */
static int
detach(struct holder *h)
{
	char dir[sizeof(h->at.sun_path) - 38];
	struct stat out, err;
	struct dirent *e;
	int null, fd;
	DIR *d;

	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 || setsid() < 0)
		return -1;
	if (fstat(1, &out) == 0 && fstat(2, &err) == 0 &&
	    S_ISFIFO(out.st_mode) && out.st_ino == err.st_ino)
		dup2(null, 2);
	if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || close(null) < 0)
		return -1;
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((e = readdir(d)) != NULL)
			if ((fd = (int)strtol(e->d_name, NULL, 10)) > 2 &&
			    fd != dirfd(d) && fcntl(fd, F_GETFD) == 0)
				close(fd);
		closedir(d);
	}
	if (rundir(dir, sizeof(dir), 1) < 0)
		return -1;
	h->at.sun_family = AF_UNIX;
	snprintf(h->at.sun_path, sizeof(h->at.sun_path), "%s/%ld.%llu.%ld",
	    dir, (long)h->own.pid, h->owner.start, (long)getpid());
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0)
		return -1;
	h->own.fds[1] = fd;
	if (bind(fd, (struct sockaddr *)&h->at, sizeof(h->at)) < 0 ||
	    listen(fd, 8) < 0)
		return -1;
#ifdef SYS_pidfd_open
	/* Opened after the owner's start was noted: a pidfd of a recycled
	 * pid would fail the check. Without one, ended() looks each second. */
	h->own.fds[0] = (int)syscall(SYS_pidfd_open, h->own.pid, 0);
#endif
	if (watch_stat(h->own.pid, &h->owner) < 0 ||
	    h->owner.start != owner.start) {
		h->owner.start = 0;	/* ended already: ended() says so */
		if (h->own.fds[0] >= 0)
			close(h->own.fds[0]);
		h->own.fds[0] = -1;
	}
	return 0;
}

static void
caller(const struct rlock_opts *o, int fd, struct lock *l,
    const struct lock_ctx *ctx, long long fence)
{
	unsigned char st = RL_EXIT_OSERR;
	char f[24], name[96];
	ssize_t n;

	while ((n = read(fd, &st, 1)) < 0 && errno == EINTR)
		;
	if (n <= 0) {
		/* The holder died holding KEY: give it back. */
		printable(o->key, strlen(o->key), name, sizeof(name));
		msg_err("the holder of '%s' ended before it started", name);
		l = lock_new_like(l);
		if (lock_open(l) == 0)
			(void)lock_release(l, ctx);
	}
	snprintf(f, sizeof(f), "%lld", fence);
	if (st == 0 && o->export_env)
		section_export(o->key, ctx->token, f);
	fflush(stdout);
	/* Now: the lock's connections are the holder's, TLS sessions too. */
	_exit(st);
}

int
section_hold(const struct rlock_opts *o, struct lock_ctx *ctx,
    struct lock *l, int sigfd, const struct wait_result *res,
    struct sup_ahead *a)
{
	struct holder h = { .own = { .pid = (pid_t)o->owner, .fds = { -1, -1 },
	    .started = started, .ended = ended }, .owner = owner,
	    .key = o->key, .token = ctx->token, .fence = res->fence,
	    .ready = -1, .client = -1 };
	int p[2], st = RL_EXIT_OSERR;
	char name[96];
	pid_t pid = -1;

	if (pipe2(p, O_CLOEXEC) == 0 && (pid = fork()) > 0) {
		close(p[1]);
		caller(o, p[0], l, ctx, res->fence);
	}
	/* The holder, or no fork (then nothing below holds anything). */
	if (pid == 0) {
		close(p[0]);
		h.ready = p[1];
	}
	if (pid == 0 && detach(&h) == 0) {
		a->owner = &h.own;
		st = sup_run(o, ctx, l, sigfd, res, a);
	} else {
		printable(o->key, strlen(o->key), name, sizeof(name));
		msg_err("cannot leave a holder for '%s': %s", name,
		    strerror(errno));
		(void)lock_release(l, ctx);
	}
	tell(&h, st);
	if (h.client >= 0) {
		(void)send(h.client, &(char){ st == RL_EXIT_LEASE_LOST ?
		    RL_EXIT_LEASE_LOST : 0 }, 1, MSG_NOSIGNAL);
		close(h.client);
	}
	if (h.own.fds[1] >= 0) {
		unlink(h.at.sun_path);
		close(h.own.fds[1]);
	}
	if (h.own.fds[0] >= 0)
		close(h.own.fds[0]);
	return st;
}

/*
 * Send req (n bytes) to the holders of the nearest of our ancestors that
 * has one answering for its KEY: every such holder for 'u', the first
 * for 't'. The number that answered; the last answer in ans ('u': 70 if
 * any was lost).
 */
static int
ask(const char *req, size_t n, char *ans, size_t len)
{
	pid_t at = getpid();			/* exec'd in its place */
	struct watch_stat up;
	struct timeval tmo = { ASK_MS / 1000, 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path) - 38], lost = 0;
	unsigned long long start;
	struct dirent *e;
	int fd, any = 0, got = 0;
	ssize_t r;
	long pid;
	DIR *d;

	if (rundir(dir, sizeof(dir), 0) < 0 || (d = opendir(dir)) == NULL)
		return 0;
	/* No holder at all (a plain run's case): no ancestry to read. */
	while ((e = readdir(d)) != NULL)
		if (sscanf(e->d_name, "%*d.%*u.%ld", &pid) == 1 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);	/* it died */
		else if (e->d_name[0] != '.')
			any = 1;
	for (; any && !got && at > 1 && watch_stat(at, &up) == 0;
	    at = up.ppid) {
		rewinddir(d);
		while ((e = readdir(d)) != NULL && !(got && *req == 't')) {
			if (sscanf(e->d_name, "%ld.%llu.", &pid, &start) != 2 ||
			    pid != at || start != up.start ||
			    (fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC,
			    0)) < 0)
				continue;
			snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%.36s",
			    dir, e->d_name);
			if (*req == 't')
				setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo,
				    sizeof(tmo));
			if (connect(fd, (struct sockaddr *)&sa,
			    sizeof(sa)) == 0 &&
			    send(fd, req, n, MSG_NOSIGNAL) == (ssize_t)n &&
			    (r = recv(fd, ans, len - 1, 0)) > 0 &&
			    (r > 1 || ans[0] != 1)) {
				ans[r] = '\0';
				lost |= ans[0] == RL_EXIT_LEASE_LOST;
				got++;
			}
			close(fd);
		}
	}
	closedir(d);
	if (got && *req == 'u' && lost)
		ans[0] = RL_EXIT_LEASE_LOST;
	return got;
}

int
section_unlock(const struct rlock_opts *o)
{
	char req[KEY_MAX_LEN + 2] = "u", ans[64], name[94];
	size_t n = o->key ? strlen(o->key) : 0;

	memcpy(req + 1, o->key ? o->key : "", n);
	if (ask(req, n + 1, ans, sizeof(ans)) > 0)
		return ans[0] == RL_EXIT_LEASE_LOST ? RL_EXIT_LEASE_LOST : 0;
	printable(o->key ? o->key : "", n, name, sizeof(name));
	msg_notice("unlock: this shell holds no lock%s%s%s taken with rlock "
	    "lock", n ? " '" : "", name, n ? "'" : "");
	return 1;
}

int
section_env(const char *key)
{
	char req[KEY_MAX_LEN + 2] = "t", ans[64];
	size_t n = strlen(key);

	memcpy(req + 1, key, n);
	if (ask(req, n + 1, ans, sizeof(ans)) == 0 || strlen(ans) < 38 ||
	    ans[36] != ' ')
		return -1;
	ans[36] = '\0';
	setenv("RLOCK_KEY", key, 1);
	setenv("RLOCK_TOKEN", ans, 1);
	setenv("RLOCK_FENCE", ans + 37, 1);
	return 0;
}
