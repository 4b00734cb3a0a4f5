/* SPDX-License-Identifier: MIT */
/*
 * Name lookups by a deadline. getaddrinfo(3) can be neither interrupted
 * nor told how long it may take (the resolver's own timeouts and tries
 * add up to tens of seconds). While rlock listens for signals (sig.h) a
 * signal ends it anyway; otherwise a name that is not an address is
 * looked up on a thread of its own, waited for until the deadline or a
 * stop signal, and then left to end on its own.
 */
#ifndef RLOCK_RESOLVE_H
#define RLOCK_RESOLVE_H

#include <netdb.h>
#include <stdint.h>

/*
 * getaddrinfo(host, port, hints, out), by `deadline` (mono ms): its
 * result (*out freed with freeaddrinfo), EAI_AGAIN when the deadline
 * came first, or EAI_SYSTEM with errno ECANCELED when a stop signal
 * this thread watches for did.
 */
int resolve(const char *host, const char *port, const struct addrinfo *hints,
    int64_t deadline, struct addrinfo **out);

#endif
