// SPDX-License-Identifier: MIT
/*
 * The watcher. rlock forks it before COMMAND and keeps the write end of
 * a pipe to it, which nothing is written to: its end of file is rlock's
 * end, by exit or death. What the watcher is to do then is in a page
 * both share: COMMAND's pid, written by COMMAND's child before its exec,
 * and whether rlock stood the watcher down (COMMAND ended). Neither is a
 * word the watcher must wake for, so it costs rlock nothing while
 * COMMAND runs nor when it ends, on the way to the release a waiter
 * waits for.
 *
 * At rlock's end with COMMAND's pid and no stand-down (rlock died), the
 * watcher sends the --on-lost signal to COMMAND and every process below
 * it in COMMAND's session (found in /proc, the tree still whole: COMMAND
 * has no parent-death signal of its own while a watcher stands), and to
 * COMMAND's process group when it leads one (which reaches the children
 * that were adopted by init already), and exits. A process that left
 * for a session of its own (a daemon) is not touched. The watcher is a
 * fork of a threaded process, so it calls async-signal-safe functions
 * only: no allocation, no stdio.
 */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The processes of COMMAND's tree one watcher signals: past that many,
 * only COMMAND's process group is reached. */
#define TREE_MAX 4096

/* Shared with the watcher: what it does at rlock's end. */
struct watch_page {
	_Atomic pid_t cmd;	/* COMMAND, once its child runs */
	atomic_int stood_down;	/* COMMAND ended: nothing to do */
};

struct tree {
	pid_t pid[TREE_MAX];
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
static long
number(const char **p, const char *end)
{
	long v = 0;
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

/*
 * /proc/PID/stat's parent and session: 0, or -1 when the process is gone
 * (or a zombie: it can start nothing more). The command name may hold
 * blanks and parentheses: the fields start after the last ')'.
 */
static int
stat_of(const char *pid, pid_t *ppid, pid_t *sid)
{
	char path[40] = "/proc/", buf[512];
	const char *p, *end;
	ssize_t n;
	long v;
	int fd;

	if (strlen(pid) > 20)
		return -1;
	strcat(strcat(path, pid), "/stat");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
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
	*ppid = (pid_t)(v = number(&p, end));
	if (v < 0 || number(&p, end) < 0)	/* the process group */
		return -1;
	*sid = (pid_t)(v = number(&p, end));
	return v < 0 ? -1 : 0;
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
	pid_t pid, ppid, sid;
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
			if (in_tree(t, pid) || stat_of(d->name, &ppid, &sid) < 0)
				continue;
			if (sid == t->sid && in_tree(t, ppid)) {
				t->pid[t->n++] = pid;
				added++;
			}
		}
	}
	close(fd);
	return added;
}

static void
stop_tree(pid_t cmd, int sig)
{
	static struct tree t;	/* the watcher's own copy: no allocation */
	char name[24];
	pid_t ppid, v;
	int i, len = 0;

	for (v = cmd; v > 0; v /= 10)
		len++;
	name[len] = '\0';
	for (v = cmd, i = len; i > 0; v /= 10)
		name[--i] = (char)('0' + v % 10);
	t.n = 0;
	t.pid[t.n++] = cmd;
	/* The tree is read whole before anyone is signalled: a parent that
	 * ends hands its children to init, out of reach. */
	if (stat_of(name, &ppid, &t.sid) == 0)
		while (grow(&t) > 0)
			;
	if (getpgid(cmd) == cmd)
		(void)kill(-cmd, sig);
	for (i = 0; i < t.n; i++)
		(void)kill(t.pid[i], sig);
}

/* The watcher's life: never returns. */
static void
watcher(int rd, int sig, struct watch_page *page)
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
	/* Nothing is ever written: only rlock's end, by exit or death. */
	do
		n = read(0, &b, 1);
	while (n < 0 && errno == EINTR);
	cmd = atomic_load(&page->cmd);
	if (n == 0 && cmd > 0 && !atomic_load(&page->stood_down))
		stop_tree(cmd, sig);
	_exit(0);
}

int
watch_start(struct watcher *w, int sig)
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
	if (pipe2(p, O_CLOEXEC) < 0) {
		e = errno;
		munmap(page, sizeof(*page));
		errno = e;
		return -1;
	}
	if ((pid = fork()) == 0)
		watcher(p[0], sig, page);
	e = errno;
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		munmap(page, sizeof(*page));
		errno = e;
		return -1;
	}
	w->pid = pid;
	w->fd = p[1];
	w->page = page;
	return 0;
}

int
watch_child(const struct watcher *w)
{
	if (w->pid <= 0)
		return -1;
	atomic_store(&w->page->cmd, getpid());
	return 0;
}

void
watch_stop(struct watcher *w)
{
	if (w->pid <= 0)
		return;
	atomic_store(&w->page->stood_down, 1);
	w->pid = 0;
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
	stop_tree(pid, sig);
}
