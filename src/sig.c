// SPDX-License-Identifier: MIT
/*
 * The signal set and its signalfd. SIGPIPE is ignored because a write to a
 * Redis connection the server closed would otherwise kill rlock (hiredis
 * does not use MSG_NOSIGNAL); COMMAND gets it back by sig_restore.
 */
#include <sys/signalfd.h>

#include "sig.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

/*
 * Every signal whose default action ends a process, so that none of them
 * can kill rlock with the lock held (or a --fair waiter with its place
 * queued): while waiting they end the wait, while COMMAND runs they are
 * forwarded. SIGKILL cannot be blocked; SIGPIPE is ignored (above). The
 * fault signals (SEGV, BUS, FPE, ILL, TRAP, SYS) count only as sent by
 * kill(2): one that a real fault raises in rlock is delivered whatever
 * the mask, and kills it as before. Then the real-time signals.
 */
static const int SIGNALS[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD,
	SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGXCPU, SIGXFSZ,
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
	SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS
};

int
sig_setup(void)
{
	sigset_t set;
	size_t i;
	int rt;

	signal(SIGPIPE, SIG_IGN);
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
	sigset_t none;

	signal(SIGPIPE, SIG_DFL);
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
