// SPDX-License-Identifier: MIT
/*
 * Fault injection for tests/faults.bats, loaded with LD_PRELOAD: the OS
 * refusing rlock something once, at a chosen moment. Redis is never
 * mocked; only the libc calls below are wrapped.
 *
 *   RLOCK_FAULT_POLL_FILE=F  the first poll() of the main thread once
 *                            the file F exists fails with ENOMEM (the
 *                            test makes F when it wants the fault: a
 *                            time after start could fall in the connect
 *                            on a busy machine)
 *   RLOCK_FAULT_MALLOC_MS=N  the first allocation (malloc, calloc or
 *                            realloc) N ms after start, in any thread,
 *                            returns NULL
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t start = -1;
static atomic_int poll_done, malloc_done;

static int64_t
at(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoll(v, NULL, 10) : -1;
}

__attribute__((constructor)) static void
init(void)
{
	start = now_ms();
}

/* Once F exists, fail the main thread's poll() that is waiting, not the
 * next one: a wait is cut into 10 ms slices, and the file is looked for
 * between them. */
int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	const char *file = getenv("RLOCK_FAULT_POLL_FILE");
	int64_t end, left;
	int r, slice;

	if (real == NULL)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT,
		    "poll");
	if (file == NULL || syscall(SYS_gettid) != getpid())
		return real(fds, n, timeout);
	end = timeout < 0 ? -1 : now_ms() + timeout;
	for (;;) {
		if (!atomic_load(&poll_done) && access(file, F_OK) == 0 &&
		    !atomic_exchange(&poll_done, 1)) {
			errno = ENOMEM;
			return -1;
		}
		slice = 10;
		if (end >= 0 && (left = end - now_ms()) < slice)
			slice = left > 0 ? (int)left : 0;
		if ((r = real(fds, n, slice)) != 0 || atomic_load(&poll_done))
			return r;
		if (end >= 0 && now_ms() >= end)
			return 0;
	}
}

/* Is this allocation the one to refuse? */
static int
refuse(void)
{
	static int64_t when = -2;

	if (when == -2)
		when = at("RLOCK_FAULT_MALLOC_MS");
	return when >= 0 && start >= 0 && now_ms() - start >= when &&
	    !atomic_exchange(&malloc_done, 1);
}

void *
malloc(size_t n)
{
	return refuse() ? NULL : __libc_malloc(n);
}

void *
calloc(size_t n, size_t size)
{
	return refuse() ? NULL : __libc_calloc(n, size);
}

/* realloc(NULL, 0)-style frees are not allocations to refuse. */
void *
realloc(void *p, size_t n)
{
	if (n > 0 && refuse())
		return NULL;
	return __libc_realloc(p, n);
}
