// SPDX-License-Identifier: MIT
/*
 * Name lookups by a deadline; see resolve.h. A lookup given up is the
 * thread's to free: the lookup is shared, and the last of the two to let
 * go of it frees it.
 */
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "sig.h"
#include "util.h"

struct lookup {
	atomic_int refs;		/* the caller's and the thread's */
	atomic_int over;		/* rc, err and ai are set */
	char *host, *port;
	struct addrinfo hints, *ai;
	int rc, err;
	int done[2];			/* a byte once it is over */
};

static void
lookup_put(struct lookup *k)
{
	if (atomic_fetch_sub(&k->refs, 1) != 1)
		return;
	if (k->ai != NULL)
		freeaddrinfo(k->ai);
	close(k->done[0]);
	close(k->done[1]);
	free(k->host);
	free(k->port);
	free(k);
}

static void *
lookup_run(void *arg)
{
	struct lookup *k = arg;

	k->rc = getaddrinfo(k->host, k->port, &k->hints, &k->ai);
	k->err = errno;
	atomic_store(&k->over, 1);
	(void)!write(k->done[1], "", 1);
	lookup_put(k);
	return NULL;
}

/* Wait for k until deadline or a stop signal: 0 over, else as resolve. */
static int
await(struct lookup *k, int64_t deadline)
{
	struct pollfd p[2];
	int n;

	while (!atomic_load(&k->over)) {
		if (mono_ms() >= deadline)
			return EAI_AGAIN;
		p[0] = (struct pollfd){ .fd = k->done[0], .events = POLLIN };
		n = sig_poll(p, 1, deadline_poll_ms(deadline));
		if (n < 0 && errno == ECANCELED)
			return EAI_SYSTEM;
	}
	return 0;
}

int
resolve(const char *host, const char *port, const struct addrinfo *hints,
    int64_t deadline, struct addrinfo **out)
{
	struct addrinfo numeric = *hints;
	struct lookup *k;
	pthread_t t;
	int rc, e;

	/* An address needs no name server; while rlock listens, a signal
	 * ends a lookup that hangs. */
	numeric.ai_flags |= AI_NUMERICHOST;
	if (getaddrinfo(host, port, &numeric, out) == 0)
		return 0;
	if (sig_listening())
		return getaddrinfo(host, port, hints, out);
	/* No time left: no lookup, whatever a thread might answer first. */
	if (mono_ms() >= deadline) {
		errno = ETIMEDOUT;
		return EAI_AGAIN;
	}
	k = xcalloc(1, sizeof(*k));
	if (pipe2(k->done, O_CLOEXEC) < 0) {
		free(k);
		return getaddrinfo(host, port, hints, out);
	}
	k->host = xstrdup(host);
	k->port = xstrdup(port);
	k->hints = *hints;
	atomic_init(&k->refs, 2);
	if (sig_thread_create(&t, lookup_run, k) != 0) {
		atomic_init(&k->refs, 1);
		lookup_put(k);
		return getaddrinfo(host, port, hints, out);
	}
	pthread_detach(t);
	if ((rc = await(k, deadline)) != 0) {
		lookup_put(k);
		errno = rc == EAI_SYSTEM ? ECANCELED : ETIMEDOUT;
		return rc;
	}
	rc = k->rc;
	e = k->err;
	*out = k->ai;
	k->ai = NULL;
	lookup_put(k);
	errno = e;
	return rc;
}
