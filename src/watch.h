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
	pid_t pid;		/* 0: none, or stood down */
	int fd;			/* our end of its pipe, open until we end */
	struct watch_page *page;
};

/*
 * Start a watcher that will send sig to COMMAND's tree if rlock dies
 * before watch_stop. 0, or -1 (errno) with none started. Call from the
 * main thread, before COMMAND is forked and before any pipe whose end of
 * file rlock waits for is made: the watcher holds a copy of every file
 * until it has closed them.
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
 * it. Async-signal-safe; idempotent. The watcher is not told at once (it
 * sleeps on): it learns at rlock's end, and ends then. Not waited for.
 */
void watch_stop(struct watcher *w);

/* watch_child for a process that is not our child (a section's owner),
 * from its supervisor. */
int watch_adopt(const struct watcher *w, pid_t pid);

/* What the watcher does at rlock's death, now: send sig to pid's tree. */
void watch_tree(pid_t pid, int sig);

#endif
