// SPDX-License-Identifier: MIT
/*
 * The signal set and its signalfd, the two phases in which rlock hears
 * them, and the signal state COMMAND starts with: the dispositions rlock
 * was started with, no signal blocked. rlock ignores SIGPIPE for itself:
 * OpenSSL writes to a TLS connection with write(2), and rlock's own
 * stderr or stdout may be a pipe whose reader left (`rlock status |
 * head`), and a SIGPIPE there must not end rlock with the lock held.
 * sig_restore gives COMMAND back the SIGPIPE disposition rlock found.
 *
 * Listening (from sig_setup to sig_hold): nothing of ours is in Redis,
 * so a stop signal may end rlock where it stands, whatever call it is
 * in (a read of a FIFO, a name lookup), by a handler that only _exits.
 * Holding (from sig_hold on): they wait on the signalfd, and the main
 * thread's waits on the way to the grant poll the stop fd (a signalfd of
 * the same signals but SIGCHLD, which reading the other one empties) to
 * end early, and let the waiting loop undo what it may have started.
 */
#include <sys/signalfd.h>

#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exitcode.h"

/*
 * Every signal whose default action ends a process, so that none of them
 * can kill rlock with the lock held (or a --fair waiter with its place
 * queued): while waiting they end the wait, while COMMAND runs they are
 * forwarded. SIGKILL cannot be blocked; SIGPIPE is ignored (above). The
 * fault signals (SEGV, BUS, FPE, ILL, TRAP, SYS) count only as sent by
 * kill(2): one that a real fault raises in rlock is delivered whatever
 * the mask, and kills it. Then the real-time signals.
 *
 * The first N_HEARD are heard by the exit handler while listening: all
 * but SIGCHLD and those a fault raises (a real fault must still dump its
 * core; as sent by kill(2) they wait on the signalfd, as the real-time
 * signals do). One our caller ignored stays ignored, and unblocked, as
 * it is while holding: what it does then is what it always did.
 */
static const int SIGNALS[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM,
	SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGXCPU, SIGXFSZ,
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
	SIGCHLD, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
};
#define N_SIGNALS (sizeof(SIGNALS) / sizeof(SIGNALS[0]))
#define N_HEARD (N_SIGNALS - 8)	/* all but the last line */

/*
 * libc keeps the real-time signals below SIGRTMIN for itself (32 and 33
 * with glibc), and glibc installs a handler on one of them when the first
 * thread starts. The renewal thread starts before COMMAND, and an exec
 * resets a handled signal to its default, so one our caller ignored would
 * reach COMMAND no longer ignored. Which of them were ignored is noted
 * before any thread and put back by sig_restore; libc refuses sigaction()
 * on them, so with the system call, in the kernel's struct (the generic
 * layout: handler first; a zeroed one with SIG_IGN means the same where
 * there is no restorer field). MIPS, Alpha and SPARC order it otherwise:
 * there the note is not taken.
 */
#if defined(__mips__) || defined(__alpha__) || defined(__sparc__)
#define RESERVED_BY_SYSCALL 0
#else
#define RESERVED_BY_SYSCALL 1
#endif
#define FIRST_RT_SIGNAL 32

struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned char mask[_NSIG / 8];	/* bytes: no padding before it */
};

static unsigned long reserved_ignored;	/* bit n: signal 32 + n */
static int pipe_ignored;		/* our caller ignored SIGPIPE */
static int chld_ignored;		/* and SIGCHLD */

static sigset_t heard;			/* N_HEARD less the ignored */
static atomic_int listening;		/* between sig_setup and sig_hold */
static int stop_sigfd = -1;		/* SIGNALS but SIGCHLD */
static _Thread_local int stop_watched;	/* this thread's waits poll it */

/*
 * One our caller ignored (nohup's SIGHUP) is left out: blocked, the
 * kernel would queue it for the signalfd, and a wait would end on it.
 * Unblocked and ignored, the kernel drops it, as it would for COMMAND.
 */
static void
add_unless_ignored(sigset_t *set, int sig)
{
	struct sigaction was;

	if (sigaction(sig, NULL, &was) < 0 || was.sa_handler != SIG_IGN)
		sigaddset(set, sig);
}

/* Async-signal-safe, and all it does: nothing of ours is in Redis yet. */
static void
exit_on(int sig)
{
	_exit(RL_EXIT_SIGNAL_BASE + sig);
}

/* The exit handler on N_HEARD (in `heard` those it took); 0 or -1. */
static int
listen_setup(void)
{
	struct sigaction on = { .sa_handler = exit_on }, was;
	size_t i;

	sigfillset(&on.sa_mask);
	sigemptyset(&heard);
	for (i = 0; i < N_HEARD; i++) {
		if (sigaction(SIGNALS[i], &on, &was) < 0)
			return -1;
		if (was.sa_handler == SIG_IGN)
			(void)sigaction(SIGNALS[i], &was, NULL);
		else
			sigaddset(&heard, SIGNALS[i]);
	}
	return 0;
}

static void
note_reserved_ignored(void)
{
	struct ksigaction k;
	int sig;

	for (sig = FIRST_RT_SIGNAL; RESERVED_BY_SYSCALL && sig < SIGRTMIN &&
	    sig < FIRST_RT_SIGNAL + 64; sig++)
		if (syscall(SYS_rt_sigaction, sig, NULL, &k, _NSIG / 8) == 0 &&
		    k.handler == SIG_IGN)
			reserved_ignored |= 1UL << (sig - FIRST_RT_SIGNAL);
}

int
sig_setup(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, was;
	sigset_t set;
	size_t i;
	int rt, fd, e;

	note_reserved_ignored();
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGPIPE, &ign, &was) == 0)
		pipe_ignored = was.sa_handler == SIG_IGN;
	/* An ignored SIGCHLD reaps COMMAND for the kernel: rlock would
	 * never hear it end. COMMAND gets it back ignored (sig_restore). */
	if (sigaction(SIGCHLD, NULL, &was) == 0 && was.sa_handler == SIG_IGN) {
		chld_ignored = 1;
		signal(SIGCHLD, SIG_DFL);
	}
	sigemptyset(&set);
	for (i = 0; i < N_SIGNALS; i++)
		add_unless_ignored(&set, SIGNALS[i]);
	for (rt = SIGRTMIN; rt <= SIGRTMAX; rt++)
		add_unless_ignored(&set, rt);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0 ||
	    (fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		return -1;
	sigdelset(&set, SIGCHLD);
	if ((stop_sigfd = signalfd(-1, &set, SFD_CLOEXEC |
	    SFD_NONBLOCK)) < 0 || listen_setup() < 0) {
		e = errno;
		close(fd);
		if (stop_sigfd >= 0)
			close(stop_sigfd);
		stop_sigfd = -1;
		errno = e;
		return -1;
	}
	/* Pending ones (our caller blocked them) are heard now. */
	listening = 1;
	(void)pthread_sigmask(SIG_UNBLOCK, &heard, NULL);
	return fd;
}

void
sig_hold(void)
{
	if (!listening)
		return;
	(void)pthread_sigmask(SIG_BLOCK, &heard, NULL);
	listening = 0;
}

int
sig_listening(void)
{
	return listening;
}

int
sig_stop_watch(int on)
{
	int was = stop_watched;

	stop_watched = on;
	return was;
}

int
sig_stop_fd(void)
{
	return stop_watched ? stop_sigfd : -1;
}

int
sig_stopping(void)
{
	struct pollfd p = { .fd = stop_sigfd, .events = POLLIN };

	return stop_watched && poll(&p, 1, 0) > 0;
}

int
sig_poll(struct pollfd *p, nfds_t n, int timeout_ms)
{
	nfds_t i;
	int k;

	if (!stop_watched)
		return poll(p, n, timeout_ms);
	p[n] = (struct pollfd){ .fd = stop_sigfd, .events = POLLIN };
	if ((k = poll(p, n + 1, timeout_ms)) <= 0 || p[n].revents == 0)
		return k;
	/* An answer that came with the signal is read first: an outcome
	 * known is one less to undo. */
	for (i = 0; i < n; i++)
		if (p[i].revents != 0)
			return k - 1;
	errno = ECANCELED;
	return -1;
}

int
sig_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

int
sig_take(int fd, struct signalfd_siginfo *si)
{
	struct signalfd_siginfo buf;
	ssize_t n;

	do
		n = read(fd, &buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(buf))
		return 0;
	if (si)
		*si = buf;
	return (int)buf.ssi_signo;
}

int
sig_take_stop(int fd)
{
	int sig;

	while ((sig = sig_take(fd, NULL)) == SIGCHLD)
		;
	return sig;
}

void
sig_restore(void)
{
	struct ksigaction ign = { .handler = SIG_IGN };
	sigset_t none;
	int n;

	if (!pipe_ignored)
		signal(SIGPIPE, SIG_DFL);
	if (chld_ignored)
		signal(SIGCHLD, SIG_IGN);
	for (n = 0; n < 64; n++)
		if (reserved_ignored & 1UL << n)
			(void)syscall(SYS_rt_sigaction, FIRST_RT_SIGNAL + n,
			    &ign, NULL, _NSIG / 8);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

int
sig_foreground(void)
{
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC), fg;

	if (fd < 0)
		return 0;	/* no controlling terminal */
	fg = tcgetpgrp(fd) == getpgrp();
	close(fd);
	return fg;
}
