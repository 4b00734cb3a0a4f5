// SPDX-License-Identifier: MIT
/*
 * phases.so: an LD_PRELOAD shim that stamps where a run's wall time goes,
 * without ptrace (strace -T slows every system call by far more than the
 * calls we are looking at). Each stamp is "EVENT NS PID MINFLT" (time on
 * CLOCK_MONOTONIC, the process's minor page faults so far), appended to
 * $PHASES_LOG by one write(2), so a child's stamps survive its exec and
 * lines of several processes do not mix.
 * $BENCH_T0 (set by `rounds -p`) is when the driver forked the run.
 *
 * Stamped: main's start (after the dynamic linker and the libraries'
 * constructors), connect(2) to a unix or TCP socket, the first write or
 * send and the first read or recv after it on a connected socket (one
 * round trip), getpwuid(3) in and out, fork(2) called, execvp(3) in the
 * child, waitpid(2) returning, exit. Only the bench loads it; the figures
 * come from bench/phases.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXFD 64

/* Per socket fd: 1 connected, 2 a write sent and its reply not yet read. */
static unsigned char sockstate[MAXFD];

static void
emit(const char *event, long long ns)
{
	static int fd = -2;
	struct rusage ru;
	char line[128];
	const char *path;
	int n;

	if (fd == -2) {
		path = getenv("PHASES_LOG");
		fd = path ? (int)syscall(SYS_open, path, O_WRONLY | O_APPEND |
		    O_CREAT | O_CLOEXEC, 0644) : -1;
	}
	if (fd < 0)
		return;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		ru.ru_minflt = 0;
	n = snprintf(line, sizeof(line), "%s %lld %ld %ld\n", event, ns,
	    (long)getpid(), ru.ru_minflt);
	(void)!syscall(SYS_write, fd, line, (size_t)n);
}

static void
stamp(const char *event)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	emit(event, (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static int (*real_main)(int, char **, char **);

static void
at_exit(void)
{
	stamp("exit");
}

static int
wrapped_main(int argc, char **argv, char **envp)
{
	const char *t0 = getenv("BENCH_T0");

	if (t0 != NULL)
		emit("t0", strtoll(t0, NULL, 10));
	stamp("main");
	atexit(at_exit);
	return real_main(argc, argv, envp);
}

int
__libc_start_main(int (*main)(int, char **, char **), int argc,
    char **argv, void (*init)(void), void (*fini)(void),
    void (*rtld_fini)(void), void *stack_end)
{
	int (*next)(int (*)(int, char **, char **), int, char **,
	    void (*)(void), void (*)(void), void (*)(void), void *);

	next = dlsym(RTLD_NEXT, "__libc_start_main");
	real_main = main;
	return next(wrapped_main, argc, argv, init, fini, rtld_fini,
	    stack_end);
}

int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	int r = NEXT(connect)(fd, sa, len);

	if (fd >= 0 && fd < MAXFD && (sa->sa_family == AF_UNIX ||
	    sa->sa_family == AF_INET || sa->sa_family == AF_INET6)) {
		sockstate[fd] = 1;
		stamp("connect");
	}
	return r;
}

int
close(int fd)
{
	if (fd >= 0 && fd < MAXFD)
		sockstate[fd] = 0;
	return NEXT(close)(fd);
}

static void
sent(int fd)
{
	if (fd >= 0 && fd < MAXFD && sockstate[fd] == 1) {
		sockstate[fd] = 2;
		stamp("send");
	}
}

static void
received(int fd, ssize_t r)
{
	if (r > 0 && fd >= 0 && fd < MAXFD && sockstate[fd] == 2) {
		sockstate[fd] = 1;
		stamp("recv");
	}
}

ssize_t
write(int fd, const void *buf, size_t n)
{
	sent(fd);
	return syscall(SYS_write, fd, buf, n);
}

ssize_t
read(int fd, void *buf, size_t n)
{
	ssize_t r = syscall(SYS_read, fd, buf, n);

	received(fd, r);
	return r;
}

ssize_t
send(int fd, const void *buf, size_t n, int flags)
{
	sent(fd);
	return NEXT(send)(fd, buf, n, flags);
}

ssize_t
recv(int fd, void *buf, size_t n, int flags)
{
	ssize_t r = NEXT(recv)(fd, buf, n, flags);

	received(fd, r);
	return r;
}

struct passwd *
getpwuid(uid_t uid)
{
	struct passwd *pw;

	stamp("getpwuid");
	pw = NEXT(getpwuid)(uid);
	stamp("getpwuid-done");
	return pw;
}

/* Not the parent's return: it races with the child's stamps. vfork is
 * not wrapped at all (a wrapper's frame would be returned from twice):
 * its child's exec stamp marks it. */
pid_t
fork(void)
{
	stamp("fork");
	return NEXT(fork)();
}

int
execvp(const char *file, char *const argv[])
{
	stamp("exec");
	return NEXT(execvp)(file, argv);
}

pid_t
waitpid(pid_t pid, int *st, int opt)
{
	pid_t r = NEXT(waitpid)(pid, st, opt);

	if (r > 0)
		stamp("reaped");
	return r;
}

pid_t
wait(int *st)
{
	pid_t r = NEXT(wait)(st);

	if (r > 0)
		stamp("reaped");
	return r;
}
