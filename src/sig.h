/* SPDX-License-Identifier: MIT */
/*
 * Signals as file-descriptor events. The signals rlock cares about are
 * blocked in every thread from the start and read from a signalfd by the
 * main thread, so no code runs in a signal handler.
 */
#ifndef RLOCK_SIG_H
#define RLOCK_SIG_H

#include <signal.h>
#include <sys/signalfd.h>

/* Block CHLD and every signal that would end rlock (sig.c), ignore PIPE;
 * return a signalfd (close-on-exec, non-blocking) or -1. Call before any
 * thread starts. */
int sig_setup(void);

/*
 * Read one pending signal from fd without blocking. Returns its number
 * (and fills *si if not NULL), or 0 when none is pending.
 */
int sig_take(int fd, struct signalfd_siginfo *si);

/* In a child before exec: the dispositions rlock was started with (those
 * sig_setup and the threads changed put back) and an empty mask. */
void sig_restore(void);

/* 1 if our process group is the foreground job of our controlling
 * terminal (the one its ^C and ^\ reach), else 0. */
int sig_foreground(void);

#endif
