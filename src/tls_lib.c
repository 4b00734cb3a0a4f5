// SPDX-License-Identifier: MIT
/*
 * Loads OpenSSL on first use (see tls_lib.h for why). The library is
 * never unloaded: its own exit handlers free what it allocated.
 */
#include "tls_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define TLS_LIB_STR2(x)	#x
#define TLS_LIB_STR(x)	TLS_LIB_STR2(x)
/* The soname of the libssl whose headers we were built with. */
#define TLS_LIB_SONAME	"libssl.so." TLS_LIB_STR(OPENSSL_SHLIB_VERSION)

struct tls_lib tls_lib;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

int
tls_lib_load(char *err, size_t errlen)
{
	const char *missing = NULL;
	void *h;
	int st = 0;

	pthread_mutex_lock(&load_lock);
	if (loaded)
		goto out;
	if ((h = dlopen(TLS_LIB_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "TLS needs OpenSSL's %s, which cannot "
		    "be loaded: %s", TLS_LIB_SONAME, dlerror());
		st = -1;
		goto out;
	}
	/* dlsym on libssl's handle finds libcrypto's functions too: it
	 * searches the library's dependencies. */
#define TLS_LIB_FIND(f) \
	if (missing == NULL && \
	    (*(void **)&tls_lib.f = dlsym(h, #f)) == NULL) \
		missing = #f;
	TLS_LIB_FUNCS(TLS_LIB_FIND)
#undef TLS_LIB_FIND
	if (missing) {
		snprintf(err, errlen, "TLS needs OpenSSL's %s with %s, which "
		    "it lacks", TLS_LIB_SONAME, missing);
		dlclose(h);
		memset(&tls_lib, 0, sizeof(tls_lib));
		st = -1;
		goto out;
	}
	loaded = 1;
out:
	pthread_mutex_unlock(&load_lock);
	return st;
}
