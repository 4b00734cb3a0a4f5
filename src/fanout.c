// SPDX-License-Identifier: MIT
/* One thread per job, signals blocked in each; see fanout.h. */
#include "fanout.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "sig.h"
#include "util.h"

struct fanout_job {
	void (*job)(void *arg, int i);
	void *arg;
	int i;
	int stop;			/* the caller's sig_stop_watch */
	pthread_t t;
	int started;
};

static void *
run_one(void *p)
{
	struct fanout_job *f = p;

	(void)sig_stop_watch(f->stop);
	f->job(f->arg, f->i);
	return NULL;
}

void
fanout_run(int n, void (*job)(void *arg, int i), void *arg)
{
	struct fanout_job *f;
	sigset_t all, old;
	int i, stop;

	if (n <= 1) {
		if (n == 1)
			job(arg, 0);
		return;
	}
	f = xcalloc((size_t)n, sizeof(*f));
	stop = sig_stop_fd() >= 0;
	/* Threads take the mask of the thread that makes them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < n; i++) {
		f[i].job = job;
		f[i].arg = arg;
		f[i].i = i;
		f[i].stop = stop;
		f[i].started = pthread_create(&f[i].t, NULL, run_one,
		    &f[i]) == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	job(arg, 0);
	for (i = 1; i < n; i++) {
		if (f[i].started)
			pthread_join(f[i].t, NULL);
		else
			job(arg, i);
	}
	free(f);
}
