/* SPDX-License-Identifier: MIT */
/*
 * The watcher: a small process that outlives rlock only to stop COMMAND
 * and every process COMMAND started, should rlock die without ending
 * them (SIGKILL, the OOM killer), as the holder itself would have: the
 * --on-lost signal at once and, for SIGTERM, SIGKILL after --kill-after
 * shortened to fit the lease. The kernel's parent-death signal reaches
 * COMMAND alone; its children would be adopted by init and run on after
 * the lease lapsed. Never prints.
 */
#ifndef RLOCK_WATCH_H
#define RLOCK_WATCH_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct watch_page;

/* Zeroed: none started. */
struct watcher {
	pid_t pid;		/* 0: none, or reaped */
	int fd;			/* our end of its pipe; -1 once stood down */
	struct watch_page *page;
};

/* What the watcher must know of the lease to act as the holder would;
 * all times mono ms (lease.h). */
struct watch_lease {
	int sig;		/* --on-lost's signal */
	int64_t grace_ms;	/* SIGTERM to SIGKILL: lease_kill_grace_ms */
	int64_t lease_ms;
	int64_t hold_until;	/* --max-hold's bound; INT64_MAX: none */
	int64_t last_ok;	/* the grant, until watch_last_ok says more */
};

/*
 * Start a watcher that will stop COMMAND's tree as wl says if rlock dies
 * before watch_stop. 0, or -1 (errno) with none started. Call from the
 * main thread, after the grant (a run that does not get the lock forks
 * nothing) and before COMMAND is forked. The watcher holds a copy of
 * every file of rlock until its first act closes them: the end of file
 * of a pipe made before comes a moment later.
 */
int watch_start(struct watcher *w, const struct watch_lease *wl);

/*
 * Where the renewal thread stores the start of each extend that went
 * through (the lease's last_ok), for the watcher to time its SIGKILL by;
 * a plain store, which wakes nobody. NULL when no watcher runs.
 */
_Atomic int64_t *watch_last_ok(const struct watcher *w);

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

/* watch_child for a process that is not our child (a section's owner),
 * from its supervisor. */
int watch_adopt(const struct watcher *w, pid_t pid);

/* What /proc/PID/stat says of a process. */
struct watch_stat {
	pid_t ppid, pgid, sid;
	unsigned long long start;	/* since boot, in clock ticks */
};

/* Read it (async-signal-safe): 0, or -1 when the process is gone (or a
 * zombie: it can start nothing more). */
int watch_stat(pid_t pid, struct watch_stat *ps);

/* What the watcher does at rlock's death, now: send sig to pid's tree. */
void watch_tree(pid_t pid, int sig);

#endif
