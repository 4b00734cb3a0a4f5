/* SPDX-License-Identifier: MIT */
/*
 * Signals, heard at every moment in one of two ways (sig.c). Listening,
 * until nothing can be at stake in Redis, a stop signal ends rlock at
 * once with 128+N, from a handler that does nothing else. Holding, from
 * the moment an acquire may be written, they are blocked in every thread
 * and read from a signalfd by the main thread, whose waits on the way to
 * the grant also end when one is pending (the stop fd), so no code of
 * ours runs in a handler then.
 */
#ifndef RLOCK_SIG_H
#define RLOCK_SIG_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

/* Block CHLD and every signal that would end rlock (sig.c) but those our
 * caller ignored, ignore PIPE,
 * and start listening; return a signalfd (close-on-exec, non-blocking)
 * or -1. Call before any thread starts. */
int sig_setup(void);

/* Stop listening: from now on the signals wait on the signalfd. Before
 * the first request that may write to Redis. */
void sig_hold(void);

/* 1 while listening: a call that blocks is ended by a signal. */
int sig_listening(void);

/*
 * In the calling thread only: 1, its waits (sig_poll) end when a stop
 * signal (any but SIGCHLD) is pending; 0, they do not. Returns what it
 * was. Reading the signal stays the signalfd's reader's business.
 */
int sig_stop_watch(int on);

/* The stop fd to poll in this thread, or -1 when it watches none. */
int sig_stop_fd(void);

/* 1 when this thread watches for stop signals and one is pending. */
int sig_stopping(void);

/*
 * poll(2) on p[0..n-1], and on the stop fd when this thread watches it
 * (p has room for n + 1): as poll, or -1 with errno ECANCELED when a stop
 * signal is pending and none of p is ready.
 */
int sig_poll(struct pollfd *p, nfds_t n, int timeout_ms);

/* pthread_create with every signal blocked in the new thread, so that
 * only the main thread hears them. */
int sig_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/*
 * Read one pending signal from fd without blocking. Returns its number
 * (and fills *si if not NULL), or 0 when none is pending.
 */
int sig_take(int fd, struct signalfd_siginfo *si);

/* The first stop signal pending on fd (sig_setup's), passing over (and
 * taking) SIGCHLD; 0 when there is none. */
int sig_take_stop(int fd);

/* An undo after a stop signal (taking back a grant, a queue place) ends
 * within this: rlock exits within a second of the signal. */
#define SIG_UNDO_MS 500

/* In a child before exec: the dispositions rlock was started with (those
 * sig_setup and the threads changed put back) and an empty mask. */
void sig_restore(void);

/* 1 if our process group is the foreground job of our controlling
 * terminal (the one its ^C and ^\ reach), else 0. */
int sig_foreground(void);

#endif
