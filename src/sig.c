// SPDX-License-Identifier: MIT
/*
 * The signal set and its signalfd. SIGPIPE is ignored because a write to a
 * Redis connection the server closed would otherwise kill rlock (hiredis
 * does not use MSG_NOSIGNAL); COMMAND gets it back by sig_restore.
 */
#include <sys/signalfd.h>

#include "sig.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

static const int SIGNALS[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD
};

int
sig_setup(void)
{
	sigset_t set;
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	for (i = 0; i < sizeof(SIGNALS) / sizeof(SIGNALS[0]); i++)
		sigaddset(&set, SIGNALS[i]);
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
