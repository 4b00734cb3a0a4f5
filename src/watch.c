// SPDX-License-Identifier: MIT
/*
 * The watcher. rlock forks it once the lock is granted, before COMMAND,
 * and keeps the write end of a pipe to it, which nothing is written to:
 * its end of file is rlock's stand-down or rlock's end, by exit or death.
 * What the watcher is to do then is in a page both share: COMMAND's pid,
 * written by COMMAND's child before its exec, whether rlock stood the
 * watcher down (COMMAND ended), and the start of the last extend that
 * went through. None of them is a word the watcher must wake for, so it
 * costs rlock nothing while COMMAND runs; at the stand-down rlock closes
 * the pipe, goes on to the release while the watcher exits, and reaps
 * it last.
 *
 * At the end of file with COMMAND's pid and no stand-down (rlock died),
 * the watcher sends the --on-lost signal to COMMAND and every process
 * below it in COMMAND's session (found in /proc, the tree still whole:
 * COMMAND has no parent-death signal of its own while a watcher stands),
 * and to COMMAND's process group when it leads one (which reaches the
 * children that were adopted by init already). With SIGTERM it then
 * does what the holder would have: SIGKILL after --kill-after shortened
 * to fit the lease (lease_kill_grace_ms), and never past the lease's
 * deadline (lease_held_deadline of the last extend), to every process of
 * the tree still alive, read again (what COMMAND started meanwhile), or
 * sooner, when nothing is left. A process that left for a session of its
 * own (a daemon) is not touched. The watcher is a fork of a threaded
 * process, so it calls async-signal-safe functions only: no allocation,
 * no stdio.
 */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"
#include "util.h"

/* The processes of COMMAND's tree one watcher signals: past that many,
 * only COMMAND's process group is reached. */
#define TREE_MAX 4096

/* Between the SIGTERM and the SIGKILL, how often the watcher looks
 * whether anything of the tree is left (to end sooner when not). */
#define LOOK_MS 100

/* A page shared by two processes: its words must be atomic without a
 * lock (libatomic's locks are per process, and not async-signal-safe). */
_Static_assert(__atomic_always_lock_free(sizeof(int64_t), 0),
    "the watcher's page needs lock-free 64-bit atomics");

/* Shared with the watcher: what it does at rlock's end. */
struct watch_page {
	_Atomic pid_t cmd;	/* COMMAND, once its child runs */
	atomic_int stood_down;	/* COMMAND ended: nothing to do */
	_Atomic int64_t last_ok; /* the renewal thread's, mirrored */
};

/* A process of the tree: its pid and start time, so that a pid that
 * was freed and given to another process is never taken for it. */
struct tree {
	pid_t pid[TREE_MAX];
	struct watch_stat st[TREE_MAX];	/* as last read */
	int n;
	pid_t sid;		/* COMMAND's session */
};

static void
close_from(int lowfd)
{
	long max, fd;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, lowfd, ~0U, 0) == 0)
		return;
#endif
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = lowfd; fd < max; fd++)
		(void)close((int)fd);
}

/* A decimal at *p, past it and one blank; -1 if none. */
static long long
number(const char **p, const char *end)
{
	long long v = 0;
	int any = 0;

	while (*p < end && **p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		(*p)++;
		any = 1;
	}
	if (*p < end && **p == ' ')
		(*p)++;
	return any ? v : -1;
}

/* Past n blank-separated fields (some may be negative); 0, or -1. */
static int
skip(const char **p, const char *end, int n)
{
	while (n-- > 0) {
		while (*p < end && **p != ' ')
			(*p)++;
		if (*p == end)
			return -1;
		(*p)++;
	}
	return 0;
}

/* The command name may hold blanks and parentheses: the fields start
 * after the last ')'. */
int
watch_stat(pid_t pid, struct watch_stat *ps)
{
	char path[40], buf[1024], *q = path + sizeof(path) - 6;
	pid_t *field[3] = { &ps->ppid, &ps->pgid, &ps->sid }, d;
	const char *p, *end;
	long long v;
	ssize_t n;
	int fd, i;

	/* "/proc/PID/stat", written from its end. */
	memcpy(q, "/stat", 6);
	for (d = pid; d > 0; d /= 10)
		*--q = (char)('0' + d % 10);
	q = memcpy(q - 6, "/proc/", 6);
	if (pid <= 0 || (fd = open(q, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || (p = memrchr(buf, ')', (size_t)n)) == NULL)
		return -1;
	end = buf + n;
	p++;
	if (end - p < 4 || p[1] == 'Z')
		return -1;
	p += 3;			/* " S " */
	for (i = 0; i < 3; i++) {
		if ((v = number(&p, end)) < 0)
			return -1;
		*field[i] = (pid_t)v;
	}
	/* From the terminal (7th) to the start time (22nd). */
	if (skip(&p, end, 15) < 0 || (v = number(&p, end)) < 0)
		return -1;
	ps->start = (unsigned long long)v;
	return 0;
}

static int
in_tree(const struct tree *t, pid_t pid)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->pid[i] == pid)
			return 1;
	return 0;
}

struct dirent64_k {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* One pass over /proc, adding each process of COMMAND's session whose
 * parent is in the tree; how many were added. */
static int
grow(struct tree *t)
{
	char buf[8192];
	struct dirent64_k *d;
	long n, off;
	struct watch_stat ps;
	pid_t pid;
	int fd, added = 0;
	const char *c;

	if ((fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += d->reclen) {
			d = (struct dirent64_k *)(buf + off);
			c = d->name;
			if (*c < '1' || *c > '9' || t->n == TREE_MAX)
				continue;
			pid = (pid_t)number(&c, c + strlen(c));
			if (in_tree(t, pid) || watch_stat(pid, &ps) < 0)
				continue;
			if (ps.sid == t->sid && in_tree(t, ps.ppid)) {
				t->pid[t->n] = pid;
				t->st[t->n++] = ps;
				added++;
			}
		}
	}
	close(fd);
	return added;
}

/* Read the tree again: keep the processes that still run (the same ones,
 * by their start time), then add what they started, read while their
 * parent is there to be seen. */
static void
reread(struct tree *t)
{
	struct watch_stat ps;
	int i, n = 0;

	for (i = 0; i < t->n; i++) {
		if (watch_stat(t->pid[i], &ps) < 0 ||
		    ps.start != t->st[i].start)
			continue;
		t->pid[n] = t->pid[i];
		t->st[n++] = ps;
	}
	t->n = n;
	while (grow(t) > 0)
		;
}

/* Read the tree whole, then signal it: a parent that ends hands its
 * children to init, out of reach. Each process once, as the holder's
 * signal to COMMAND's group reaches it: a trap runs once. */
static void
signal_tree(struct tree *t, pid_t cmd, int led, int sig)
{
	int i;

	reread(t);
	if (led)
		(void)kill(-cmd, sig);
	for (i = 0; i < t->n; i++)
		if (!led || t->st[i].pgid != cmd)
			(void)kill(t->pid[i], sig);
}

/* Anything of the tree still running: one of its processes (with what
 * they started since), or one of COMMAND's group (which may have been
 * adopted by init). */
static int
left(struct tree *t, pid_t cmd, int led)
{
	reread(t);
	return t->n > 0 || (led && kill(-cmd, 0) == 0);
}

static void
nap_until(int64_t at)
{
	int64_t ms = at - mono_ms();
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000;
	(void)nanosleep(&ts, NULL);
}

/*
 * rlock died while COMMAND ran: the --on-lost signal now, and after a
 * SIGTERM a SIGKILL when the holder would have sent it, the grace
 * shortened to fit what the lease has left.
 */
static struct tree tree;	/* this process's own copy: no allocation */

/* The tree is cmd alone, to grow from; whether cmd leads its group. */
static int
tree_root(struct tree *t, pid_t cmd)
{
	struct watch_stat ps = { 0 };

	if (watch_stat(cmd, &ps) < 0)
		ps.sid = -1;	/* gone: its group only */
	t->sid = ps.sid;
	t->pid[0] = cmd;
	t->st[0] = ps;
	t->n = 1;
	return getpgid(cmd) == cmd;
}

static void
stop_tree(pid_t cmd, const struct watch_lease *wl, struct watch_page *page)
{
	struct tree *t = &tree;
	int64_t now = mono_ms(), dl, at;
	int led = tree_root(t, cmd);

	signal_tree(t, cmd, led, wl->sig);
	if (wl->sig != SIGTERM)
		return;
	/* Nobody extends the lease any more: it ends at the deadline of
	 * the last extend that went through. */
	dl = lease_held_deadline(atomic_load(&page->last_ok), wl->lease_ms,
	    wl->hold_until);
	at = now + wl->grace_ms < dl ? now + wl->grace_ms : dl;
	while (mono_ms() < at && left(t, cmd, led))
		nap_until(mono_ms() + LOOK_MS < at ? mono_ms() + LOOK_MS : at);
	if (mono_ms() >= at)
		signal_tree(t, cmd, led, SIGKILL);
}

/* The watcher's life: never returns. */
static void
watcher(int rd, const struct watch_lease *wl, struct watch_page *page)
{
	sigset_t all;
	pid_t cmd;
	char b;
	ssize_t n;

	/* Nothing reaches it but SIGKILL: not a terminal's ^C, nor a signal
	 * to rlock's process group (it leads a session of its own). */
	sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, NULL);
	if (rd != 0 && dup2(rd, 0) < 0)
		_exit(1);
	/* Holding none of rlock's files: not its end of the exec pipe, not
	 * a Redis connection, not the pipes of stdout and stderr. */
	close_from(1);
	(void)setsid();
	(void)prctl(PR_SET_NAME, "rlock-watch");
	/* Nothing is ever written: only the stand-down or rlock's end. */
	do
		n = read(0, &b, 1);
	while (n < 0 && errno == EINTR);
	cmd = atomic_load(&page->cmd);
	if (n == 0 && cmd > 0 && !atomic_load(&page->stood_down))
		stop_tree(cmd, wl, page);
	_exit(0);
}

int
watch_start(struct watcher *w, const struct watch_lease *wl)
{
	struct watch_page *page;
	int p[2], e;
	pid_t pid;

	page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -1;
	atomic_init(&page->cmd, 0);
	atomic_init(&page->stood_down, 0);
	atomic_init(&page->last_ok, wl->last_ok);
	if (pipe2(p, O_CLOEXEC) < 0)
		goto fail;
	if ((pid = fork()) == 0)
		watcher(p[0], wl, page);
	e = errno;
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		errno = e;
		goto fail;
	}
	w->pid = pid;
	w->fd = p[1];
	w->page = page;
	return 0;
fail:
	e = errno;
	munmap(page, sizeof(*page));
	errno = e;
	return -1;
}

_Atomic int64_t *
watch_last_ok(const struct watcher *w)
{
	return w->pid > 0 && w->fd >= 0 ? &w->page->last_ok : NULL;
}

int
watch_child(const struct watcher *w)
{
	return w->fd < 0 ? -1 : watch_adopt(w, getpid());
}

void
watch_stop(struct watcher *w)
{
	int fd = w->fd;

	if (w->pid <= 0 || fd < 0)
		return;
	/* Before the end of file that wakes it. */
	atomic_store(&w->page->stood_down, 1);
	w->fd = -1;
	close(fd);
}

void
watch_end(struct watcher *w)
{
	pid_t pid = w->pid;

	if (pid <= 0)
		return;
	watch_stop(w);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	munmap(w->page, sizeof(*w->page));
	w->pid = 0;
	w->page = NULL;
}

int
watch_adopt(const struct watcher *w, pid_t pid)
{
	if (w->pid <= 0)
		return -1;
	atomic_store(&w->page->cmd, pid);
	return 0;
}

void
watch_tree(pid_t pid, int sig)
{
	signal_tree(&tree, pid, tree_root(&tree, pid), sig);
}
