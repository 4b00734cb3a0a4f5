/* SPDX-License-Identifier: MIT */
/*
 * The watcher: a small process that outlives rlock only to stop COMMAND
 * and every process COMMAND started, should rlock die without ending
 * them (SIGKILL, the OOM killer). The kernel's parent-death signal
 * reaches COMMAND alone; its children would be adopted by init and run
 * on after the lease lapsed. Never prints.
 */
#ifndef RLOCK_WATCH_H
#define RLOCK_WATCH_H

#include <sys/types.h>

struct watch_page;

/* Zeroed: none started. */
struct watcher {
	pid_t pid;		/* 0: none, or reaped */
	int fd;			/* our end of its pipe; -1 once stood down */
	struct watch_page *page;
};

/*
 * Start a watcher that will send sig to COMMAND's tree if rlock dies
 * before watch_stop. 0, or -1 (errno) with none started. Call from the
 * main thread, after the grant (a run that does not get the lock forks
 * nothing) and before COMMAND is forked. The watcher holds a copy of
 * every file of rlock until its first act closes them: the end of file
 * of a pipe made before comes a moment later.
 */
int watch_start(struct watcher *w, int sig);

/*
 * In COMMAND's child before its exec (async-signal-safe): tell the
 * watcher this process is COMMAND. Returns 0, or -1 when there is no
 * watcher to tell (the caller then falls back to its parent-death signal).
 */
int watch_child(const struct watcher *w);

/*
 * Stand the watcher down (COMMAND ended or never started): call it before
 * COMMAND is reaped, so that the watcher never takes another process for
 * it. It closes our end of the pipe: the watcher wakes, finds itself
 * stood down and exits, while rlock goes on to the release.
 * Async-signal-safe; idempotent.
 */
void watch_stop(struct watcher *w);

/*
 * Stand it down if need be and reap it: every process rlock starts for
 * itself ends before rlock does. Idempotent; call it once no other
 * thread can (the last thing before the run returns).
 */
void watch_end(struct watcher *w);

#endif
