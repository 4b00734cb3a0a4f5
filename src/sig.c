// SPDX-License-Identifier: MIT
/*
 * The signal set and its signalfd, and the signal state COMMAND starts
 * with: the dispositions rlock was started with, no signal blocked. rlock
 * ignores SIGPIPE for itself: OpenSSL writes to a TLS connection with
 * write(2), and rlock's own stderr or stdout may be a pipe whose reader
 * left (`rlock status | head`), and a SIGPIPE there must not end rlock
 * with the lock held. sig_restore gives COMMAND back the SIGPIPE
 * disposition rlock found.
 */
#include <sys/signalfd.h>

#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Every signal whose default action ends a process, so that none of them
 * can kill rlock with the lock held (or a --fair waiter with its place
 * queued): while waiting they end the wait, while COMMAND runs they are
 * forwarded. SIGKILL cannot be blocked; SIGPIPE is ignored (above). The
 * fault signals (SEGV, BUS, FPE, ILL, TRAP, SYS) count only as sent by
 * kill(2): one that a real fault raises in rlock is delivered whatever
 * the mask, and kills it. Then the real-time signals.
 */
static const int SIGNALS[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD,
	SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGXCPU, SIGXFSZ,
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
	SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
};

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
	int rt;

	note_reserved_ignored();
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGPIPE, &ign, &was) == 0)
		pipe_ignored = was.sa_handler == SIG_IGN;
	sigemptyset(&set);
	for (i = 0; i < sizeof(SIGNALS) / sizeof(SIGNALS[0]); i++)
		sigaddset(&set, SIGNALS[i]);
	for (rt = SIGRTMIN; rt <= SIGRTMAX; rt++)
		sigaddset(&set, rt);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
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

void
sig_restore(void)
{
	struct ksigaction ign = { .handler = SIG_IGN };
	sigset_t none;
	int n;

	if (!pipe_ignored)
		signal(SIGPIPE, SIG_DFL);
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
